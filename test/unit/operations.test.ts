/** The operation descriptors: each is its wire's, and the models it takes are those the contract gives that wire. */
import type { Config, ModelConfig } from '../../src/config';
import { ENDPOINTS, WIRES, type Wire } from '../../src/contract';
import { ApiError } from '../../src/errors';
import { ModelRegistry } from '../../src/gateway/models';
import { native } from '../../src/gateway/providers/anthropic';
import { chatBody } from '../../src/gateway/providers/openai';
import { fieldsOf } from '../../src/gateway/providers/shared';
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

describe('request bodies built field by field (fieldsOf)', () => {
  test('fieldsOf copies the own fields in order but those excluded; a `__proto__` field stays a field', () => {
    const parsed = JSON.parse('{"a":1,"__proto__":{"polluted":true},"max_tokens":5,"b":[2]}');
    const copy = fieldsOf(parsed, ['max_tokens']);
    expect(JSON.stringify(copy)).toBe('{"a":1,"__proto__":{"polluted":true},"b":[2]}');
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { polluted?: unknown }).polluted).toBeUndefined();
    expect(copy.b).toBe(parsed.b); // the same values: splice.ts writes them from the client's bytes
  });

  test("the OpenAI chat body: the client's fields in their order, the limits and usage on streams set", () => {
    const body = JSON.parse(
      '{"model":"alias","max_tokens":9,"messages":[],"stream":true,"stream_options":{"x":1},"temperature":0}',
    );
    const ctx = { model: 'up', stream: true, maxOutputTokens: 7, headers: {}, state: undefined };
    const config = (output_limit?: string) =>
      ({ base_url: 'http://127.0.0.1:1/v1', settings: output_limit ? { output_limit } : {} }) as never;
    expect(JSON.stringify(chatBody(body, { ...ctx, config: config() }))).toBe(
      '{"model":"up","messages":[],"stream":true,"stream_options":{"x":1,"include_usage":true},"temperature":0,' +
        '"max_completion_tokens":7,"max_tokens":7}',
    );
    expect(JSON.stringify(chatBody(body, { ...ctx, stream: false, config: config('max_tokens') }))).toBe(
      '{"model":"up","messages":[],"stream":false,"stream_options":{"x":1},"temperature":0,"max_tokens":7}',
    );
    expect(body.stream_options).toEqual({ x: 1 }); // the client's body is not changed
    expect(body.max_tokens).toBe(9);
  });

  test("the Anthropic Messages body: the client's fields in their order; a lowered allowance lowers the thinking budget", () => {
    const text =
      '{"model":"a","max_tokens":8000,"messages":[],"thinking":{"type":"enabled","budget_tokens":5000},"system":"s"}';
    const body = JSON.parse(text);
    expect(JSON.stringify(native(body, 'up', 3000, false))).toBe(
      '{"model":"up","max_tokens":3000,"messages":[],"thinking":{"type":"enabled","budget_tokens":2999},"system":"s",' +
        '"stream":false}',
    );
    expect(JSON.stringify(native(body, 'up', 9000, true))).toBe(
      '{"model":"up","max_tokens":9000,"messages":[],"thinking":{"type":"enabled","budget_tokens":5000},"system":"s",' +
        '"stream":true}',
    );
    expect(JSON.stringify(body)).toBe(text);
  });
});
