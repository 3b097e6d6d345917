/**
 * Routing to several upstreams: fallback before the first byte (refused, 500, 429, stall), never after; the
 * circuit breaker; timeouts; usage counted with the tokenizer when an upstream gives none; pooled connections.
 */
import OpenAI from 'openai';
import { FakeOpenAI, chatStreamEvents } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';

let a: FakeOpenAI;
let b: FakeOpenAI;
let gw: TestGateway;
let client: OpenAI;

const CLOSED_PORT = 'http://127.0.0.1:9/v1';

beforeAll(async () => {
  a = await new FakeOpenAI().start();
  b = await new FakeOpenAI().start();
  gw = await startGateway(`
routing: { breaker_failures: 1000 }   # the breaker has its own gateway below
providers:
  a: { type: openai, base_url: "${a.url}", timeouts: { first_byte_ms: 1000, idle_ms: 1000 }, max_connections: 2 }
  b: { type: openai, base_url: "${b.url}" }
  dead: { type: openai, base_url: "${CLOSED_PORT}" }
  pool: { type: openai, base_url: "${a.url}", max_connections: 2 }
  patient: { type: openai, base_url: "${a.url}", timeouts: { first_byte_ms: 60000, idle_ms: 60000 } }
models:
  - { id: ab, kind: chat, routes: [ { provider: a, model: a-model }, { provider: b, model: b-model } ] }
  - { id: dead-then-b, kind: chat, routes: [ { provider: dead }, { provider: b } ] }
  - { id: only-a, kind: chat, routes: [ { provider: a } ] }
  - { id: weighted, kind: chat, routes: [ { provider: b, model: low, priority: 2 }, { provider: a, model: high, priority: 1 } ] }
  - { id: pooled, kind: chat, routes: [ { provider: pool, model: pooled } ] }
  - { id: route-limit, kind: chat, routes: [ { provider: patient, model: slow, timeouts: { first_byte_ms: 500 } }, { provider: b } ] }
`);
  client = new OpenAI({ apiKey: (await gw.newKey()).secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await a?.close();
  await b?.close();
});

const ask = (
  model: string,
  content = 'hello',
  extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {},
) => client.chat.completions.create({ model, messages: [{ role: 'user', content }], ...extra });

async function streamText(model: string, content = 'hello') {
  const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content }], stream: true });
  let text = '';
  for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
  return text;
}

describe('fallback before the first byte', () => {
  test('a route that refuses connections hands over to the next one', async () => {
    const before = b.requests.length;
    const res = await ask('dead-then-b', 'are you there');
    expect(res.choices[0].message.content).toBe('Echo: are you there');
    expect(b.requests.length).toBe(before + 1);
  });

  test.each([
    ['an upstream 500', { kind: 'json' as const, status: 500, body: { error: { message: 'oops' } } }],
    ['an upstream 429', { kind: 'json' as const, status: 429, body: { error: { message: 'slow down' } } }],
    ['a stall before the first byte', { kind: 'hang' as const }],
  ])(
    '%s: the second route answers, the client sees one clean response (non-streaming and streaming)',
    async (_name, plan) => {
      a.plan(plan);
      const res = await ask('ab', 'one');
      expect(res.choices[0].message.content).toBe('Echo: one');
      expect(b.last().body.model).toBe('b-model');
      a.plan(plan);
      expect(await streamText('ab', 'two')).toBe('Echo: two');
    },
  );

  test('a stream that stalls before its first chunk (headers sent, no data) hands over too', async () => {
    a.plan({ kind: 'stall', events: [] });
    expect(await streamText('ab', 'three')).toBe('Echo: three');
  });

  test("a route's own first-byte limit hands over, and closes the abandoned upstream request at once", async () => {
    const before = a.clientAborts;
    a.plan({ kind: 'stall', events: [] }); // headers sent, then silence; the provider itself would wait 60 s
    expect(await streamText('route-limit', 'four')).toBe('Echo: four');
    for (let i = 0; i < 100 && a.clientAborts === before; i++) await new Promise((r) => setTimeout(r, 30));
    expect(a.clientAborts).toBe(before + 1);
  });

  test('an upstream 400 (the caller is at fault) is not retried elsewhere', async () => {
    const before = b.requests.length;
    a.plan({ kind: 'json', status: 400, body: { error: { message: 'bad parameter x' } } });
    const e = await ask('ab').catch((err) => err);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain('bad parameter x');
    expect(b.requests.length).toBe(before);
  });

  test('routes go by priority: the lower number first', async () => {
    await ask('weighted');
    expect(a.last().body.model).toBe('high');
  });
});

describe('failures after the first byte', () => {
  test('a route that fails mid-stream: an error event, no retry, no duplicated output', async () => {
    const before = b.requests.length;
    a.plan({
      kind: 'sse',
      events: [
        ...chatStreamEvents('x', ['Hello', ' wor'], false, {}).slice(0, 3),
        { error: { message: 'overloaded' } },
      ],
      done: false,
    });
    const stream = await client.chat.completions.create({
      model: 'ab',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    let text = '';
    const error = await (async () => {
      for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    })().catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String(error.message)).toContain('overloaded');
    expect(text).toBe('Hello wor');
    expect(b.requests.length).toBe(before);
  });

  test('an upstream that goes silent mid-stream is cut after the idle limit with an error event', async () => {
    a.plan({ kind: 'stall', events: chatStreamEvents('x', ['partial'], false, {}).slice(0, 2) });
    const stream = await client.chat.completions.create({
      model: 'only-a',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    let text = '';
    const error = await (async () => {
      for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    })().catch((e) => e);
    expect(text).toBe('partial');
    expect(String(error?.message)).toMatch(/timed out/);
  });

  test('a stream cut off without [DONE] is an error, not a silent success', async () => {
    a.plan({ kind: 'sse', events: chatStreamEvents('x', ['cut'], false, {}).slice(0, 2), done: false });
    const stream = await client.chat.completions.create({
      model: 'only-a',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    await expect(
      (async () => {
        for await (const _c of stream);
      })(),
    ).rejects.toThrow(/upstream/);
  });
});

describe('circuit breaker', () => {
  let gw2: TestGateway;
  let client2: OpenAI;
  beforeAll(async () => {
    gw2 = await startGateway(`
routing: { breaker_failures: 2, breaker_cooldown_ms: 1500 }
providers:
  a: { type: openai, base_url: "${a.url}" }
  b: { type: openai, base_url: "${b.url}" }
models:
  - { id: breaker, kind: chat, routes: [ { provider: a, model: breaker-a }, { provider: b, model: breaker-b } ] }
  - { id: only-a, kind: chat, routes: [ { provider: a, model: only-a-2 } ] }
`);
    client2 = new OpenAI({ apiKey: (await gw2.newKey()).secret, baseURL: `${gw2.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => gw2?.close());
  const ask2 = (model: string, content = 'hello') =>
    client2.chat.completions.create({ model, messages: [{ role: 'user', content }] });
  const count = (model: string) => a.requests.filter((r) => r.body?.model === model).length;

  test('opens after consecutive failures, skips the route while cooling down, then probes and closes', async () => {
    a.plan({ kind: 'json', status: 500, body: {} }, { kind: 'json', status: 500, body: {} });
    await ask2('breaker');
    await ask2('breaker');
    expect(count('breaker-a')).toBe(2);
    // open: route a is skipped, b answers at once
    const res = await ask2('breaker', 'skip');
    expect(res.choices[0].message.content).toBe('Echo: skip');
    expect(count('breaker-a')).toBe(2);
    // after the cool-down one request probes route a again; it succeeds and the breaker closes
    await new Promise((r) => setTimeout(r, 1600));
    await ask2('breaker', 'probe');
    expect(count('breaker-a')).toBe(3);
    await ask2('breaker', 'closed');
    expect(count('breaker-a')).toBe(4);
  });

  test('every route cooling down: 503', async () => {
    a.plan({ kind: 'json', status: 502, body: {} }, { kind: 'json', status: 502, body: {} });
    expect((await ask2('only-a').catch((e) => e)).status).toBe(502);
    expect((await ask2('only-a').catch((e) => e)).status).toBe(502);
    const before = count('only-a-2');
    const e = await ask2('only-a').catch((err) => err);
    expect(e.status).toBe(503);
    expect(e.error).toMatchObject({ type: 'service_unavailable', code: 'service_unavailable' });
    expect(count('only-a-2')).toBe(before);
  });
});

describe('usage', () => {
  test('an upstream that reports no usage: counted with the tokenizer, non-streaming', async () => {
    a.plan({
      kind: 'json',
      body: {
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'x',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'Hello there, friend' },
            finish_reason: 'stop',
            logprobs: null,
          },
        ],
      },
    });
    const res = await ask('only-a', 'hi');
    // "Hello there, friend" is 4 tokens in o200k_base; the prompt is 3 + (3 + 1 + 1) framing tokens
    expect(res.usage).toEqual({ prompt_tokens: 8, completion_tokens: 4, total_tokens: 12 });
  });

  test('a stream without upstream usage: the client that asked for usage gets our count', async () => {
    a.plan({ kind: 'sse', events: chatStreamEvents('x', ['Hello', ' there', ', friend'], false, {}) });
    const stream = await client.chat.completions.create({
      model: 'only-a',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[chunks.length - 1]).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 8, completion_tokens: 4, total_tokens: 12 },
    });
  });

  test('usage details from the upstream are kept', async () => {
    const usage = {
      prompt_tokens: 20,
      completion_tokens: 5,
      total_tokens: 25,
      prompt_tokens_details: { cached_tokens: 16 },
      completion_tokens_details: { reasoning_tokens: 2 },
    };
    a.plan({ kind: 'sse', events: chatStreamEvents('x', ['ok'], true, usage) });
    const stream = await client.chat.completions.create({
      model: 'only-a',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[chunks.length - 1].usage).toEqual(usage);
  });
});

test('upstream connections are pooled, kept alive and bounded per upstream', async () => {
  const before = a.connections;
  a.plan(
    ...Array.from({ length: 12 }, () => ({
      kind: 'sse' as const,
      events: chatStreamEvents('x', ['a', 'b'], true, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }),
      delayMs: 20,
    })),
  );
  await Promise.all(Array.from({ length: 12 }, (_x, i) => streamText('pooled', String(i))));
  // 12 concurrent streams through an upstream limited to 2 connections
  expect(a.connections - before).toBeLessThanOrEqual(2);
  expect(a.maxOpenConnections).toBeLessThanOrEqual(2 + 1);
});
