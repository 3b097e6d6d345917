/** The operation descriptors: each is its wire's, and the models it takes are those the contract gives that wire. */
import type { Config, ModelConfig } from '../../src/config';
import { ENDPOINTS, WIRES, type Wire } from '../../src/contract';
import { ApiError } from '../../src/errors';
import { ModelRegistry } from '../../src/gateway/models';
import { OPERATIONS } from '../../src/gateway/operations';
import type * as T from '../../src/gateway/types';

const registry = new ModelRegistry({
  models: [
    { id: 'a-chat', kind: 'chat' },
    { id: 'a-completion', kind: 'completion' },
    { id: 'an-embedding', kind: 'embedding' },
    { id: 'a-speech', kind: 'speech' },
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
  expect(
    Object.fromEntries(Object.entries(OPERATIONS).map(([name, op]) => [name, takes(op).map((m) => m.id)])),
  ).toMatchObject({
    chat: ['a-chat'],
    completions: ['a-chat', 'a-completion'],
    embeddings: ['an-embedding'],
    speech: ['a-speech'],
    messages: ['a-chat'],
    responses: ['a-chat'],
  });
  expect(WIRES.completions).toEqual(['completion']); // the chat models come through the bridge
});

/** Whether two types are the same (checked by the typecheck: `make typecheck`). */
type Same<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;

test("each wire's request, answer and chunk are its contract operation's (not never, which any adapter would satisfy)", () => {
  const same: true[] = [
    true satisfies Same<Wire['chat']['req'], T.ChatRequest>,
    true satisfies Same<Wire['chat']['res'], T.ChatResponse>,
    true satisfies Same<Wire['chat']['chunk'], T.ChatChunk>,
    true satisfies Same<Wire['completions']['req'], T.CompletionRequest>,
    true satisfies Same<Wire['completions']['chunk'], T.CompletionResponse>,
    true satisfies Same<Wire['embeddings']['res'], T.EmbeddingResponse>,
    true satisfies Same<Wire['embeddings']['chunk'], never>,
    true satisfies Same<Wire['messages']['req'], T.MessagesRequest>,
    true satisfies Same<Wire['messages']['chunk'], T.AnthropicEvent>,
    true satisfies Same<Wire['count_tokens']['res'], { input_tokens: number }>,
    true satisfies Same<Wire['responses']['res'], T.ResponseObject>,
    true satisfies Same<Wire['responses']['chunk'], T.ResponseEvent>,
    // a binary answer: no JSON, its chunks the audio's bytes or its events
    true satisfies Same<Wire['speech']['req'], T.SpeechRequest>,
    true satisfies Same<Wire['speech']['res'], never>,
    true satisfies Same<Wire['speech']['chunk'], T.SpeechChunk>,
  ];
  expect(same).not.toContain(false);
});
