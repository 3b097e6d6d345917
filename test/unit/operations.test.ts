/** The operation descriptors: each is its wire's, and the models it takes are those the contract gives that wire. */
import type { Config, ModelConfig } from '../../src/config';
import { ENDPOINTS, WIRES } from '../../src/contract';
import { ApiError } from '../../src/errors';
import { ModelRegistry } from '../../src/gateway/models';
import { OPERATIONS } from '../../src/gateway/operations';

const registry = new ModelRegistry({
  models: [
    { id: 'a-chat', kind: 'chat' },
    { id: 'a-completion', kind: 'completion' },
    { id: 'an-embedding', kind: 'embedding' },
  ] as ModelConfig[],
} as Config);

test('every paid operation of the contract has the descriptor of its wire, named after it', () => {
  const paid = Object.values(ENDPOINTS).flatMap((e) => (e.caller === 'key' && e.meter === 'paid' ? [e.wire] : []));
  expect(Object.keys(OPERATIONS).sort()).toEqual(paid.sort());
  for (const [name, op] of Object.entries(OPERATIONS)) expect([op.name, op.upstream]).toEqual([name, name]);
});

test("an operation takes the models of its wire's kinds, and through its bridge those of the bridge's wire", () => {
  const takes = (op: (typeof OPERATIONS)[keyof typeof OPERATIONS]) =>
    registry.all().filter((m) => {
      try {
        return registry.resolve(m.id, op) === m;
      } catch (e) {
        expect(e).toBeInstanceOf(ApiError);
        expect((e as ApiError).message).toBe(`Model ${m.id} is a ${m.kind} model and cannot be used with ${op.path}`);
        return false;
      }
    });
  // The operations of today (one added later takes what its kinds say, and its own tests show it).
  expect(Object.fromEntries(Object.entries(OPERATIONS).map(([name, op]) => [name, takes(op).map((m) => m.id)]))).toMatchObject({
    chat: ['a-chat'],
    completions: ['a-chat', 'a-completion'],
    embeddings: ['an-embedding'],
    messages: ['a-chat'],
    responses: ['a-chat'],
  });
  expect(WIRES.completions).toEqual(['completion']); // the chat models come through the bridge
});
