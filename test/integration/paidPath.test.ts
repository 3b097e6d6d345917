/**
 * The paid path cannot be stalled or turned against the operator: a huge prompt from a key with no money is refused
 * before it is read, while other accounts are served; what the tokenizer must count is counted off the event loop;
 * bodies the gateway cannot forward safely are 400s that do not count against a route; a stream cut short is billed
 * for every delta it carried. On the database in DATABASE_URL (SQLite by default, MariaDB in the second pass).
 */
import http from 'node:http';
import { FakeOpenAI, chatStreamEvents } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { countText } from '../../src/gateway/tokenizer/count';

let up: FakeOpenAI;
let gw: TestGateway;

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  gw = await startGateway(`
billing: { min_output_tokens: 16 }
limits: { rpm: 0, tpm: 0 }
routing: { breaker_failures: 3, breaker_cooldown_ms: 60000 }
server: { max_body_bytes: 20000000 }
providers:
  up: { type: openai, base_url: "${up.url}" }
models:
  - { id: priced, kind: chat, price: { input: 0.15, output: 0.60 }, max_output_tokens: 1000, routes: [ { provider: up } ] }
`);
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

const db = () => gw.app.db;

function chat(
  secret: string,
  body: object = { model: 'priced', messages: [{ role: 'user', content: 'hi' }] },
): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** A POST whose body is written piece by piece; resolves with the status when the answer comes (or the socket closes). */
function slowPost(secret: string, contentLength: number) {
  const req = http.request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${secret}`,
      'content-type': 'application/json',
      'content-length': String(contentLength),
    },
  });
  const answered = new Promise<number>((resolve) => {
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', () => resolve(0));
  });
  return { req, answered };
}

describe('no request can stall the process', () => {
  test('a 10 MB prompt without spaces from a key with no money is refused before it is read, and another account is answered meanwhile', async () => {
    const broke = await gw.newKey({}, 0);
    const other = await gw.newKey();
    const head = '{"model":"priced","messages":[{"role":"user","content":"';
    const tail = '"}]}';
    const size = 10 * 1024 * 1024;
    const order: string[] = [];
    const big = slowPost(broke.secret, head.length + size + tail.length);
    void big.answered.then((s) => order.push(`big ${s}`));
    big.req.write(head);
    big.req.write('a'.repeat(1024 * 1024));
    // the refusal comes while most of the body has not even been sent
    await big.answered;
    const res = await chat(other.secret);
    order.push(`other ${res.status}`);
    for (let i = 1; i < 10 && !big.req.destroyed; i++) big.req.write('a'.repeat(1024 * 1024));
    big.req.end(tail);
    expect(order).toEqual(['big 429', 'other 200']);
  });

  test('what the tokenizer must count (an upstream that reports no usage) is counted off the event loop: other requests go first', async () => {
    const rich = await gw.newKey({}, 100_000_000);
    const other = await gw.newKey();
    const prompt = 'b'.repeat(2 * 1024 * 1024); // no spaces: gpt-tokenizer alone is quadratic on it
    up.plan({
      kind: 'json',
      body: {
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'x',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop', logprobs: null }],
      },
    });
    const before = up.requests.length;
    const order: string[] = [];
    const slow = chat(rich.secret, {
      model: 'priced',
      messages: [{ role: 'user', content: prompt }],
      max_tokens: 16,
    }).then((r) => order.push(`counted ${r.status}`));
    for (let i = 0; i < 200 && up.requests.length === before; i++) await new Promise((r) => setTimeout(r, 10)); // it is being counted now
    const res = await chat(other.secret);
    order.push(`other ${res.status}`);
    await slow;
    expect(order).toEqual(['other 200', 'counted 200']);
    await gw.settled();
    const record = await db()('usage_records').where('account_id', rich.accountId).first();
    expect(record).toMatchObject({ counted: 'tokenizer', completion_tokens: 1 });
    expect(Number(record.prompt_tokens)).toBeGreaterThan(prompt.length / 300); // counted in pieces, linear time
  }, 60_000);
});

describe('a free endpoint cannot pile up work: count_tokens', () => {
  const count = (secret: string, text: string) =>
    fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: text }] }),
    });

  test("counts against the key's tokens per minute, like the prompt of a paid request", async () => {
    const limited = await gw.newKey({ tpmLimit: 1_000 });
    expect((await count(limited.secret, 'x'.repeat(2_000))).status).toBe(200); // ~500 tokens
    const res = await count(limited.secret, 'x'.repeat(4_000)); // ~1,000 more: over the minute's 1,000
    expect(res.status).toBe(429);
    expect(((await res.json()) as any).error.type).toBe('rate_limit_error');
  });

  test('beyond half a second of queued tokenizer work, an estimate is refused (529 overloaded) rather than queued, and paid requests go on', async () => {
    const a = await gw.newKey();
    const other = await gw.newKey();
    const text = 'c'.repeat(3 * 1024 * 1024); // 3 MB: about 0.4 s of the worker each
    const statuses = await Promise.all(
      Array.from({ length: 6 }, () =>
        count(a.secret, text).then(async (r) => [r.status, ((await r.json()) as any).error?.type]),
      ),
    );
    const refused = statuses.filter(([s]) => s === 529);
    // how many arrive while one is counted depends on the machine's speed; without the limit none would be refused
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused[0]).toEqual([529, 'overloaded_error']);
    expect(statuses.filter(([s]) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect((await chat(other.secret)).status).toBe(200);
  }, 60_000);
});

describe('bodies the gateway cannot forward safely', () => {
  test('nesting deeper than 64 levels is a 400, and three of them do not take the route down for everyone', async () => {
    const a = await gw.newKey();
    const deep = `{"model":"priced","messages":[{"role":"user","content":"x"}],"extra":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
        body: deep,
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toMatchObject({
        type: 'invalid_request_error',
        message: 'The request body is nested deeper than 64 levels',
        param: 'extra',
      });
    }
    expect((await chat(a.secret)).status).toBe(200); // the route is not cooling down
  });

  test('numbers that are not finite (1e309 parses to Infinity) are a 400 naming the field', async () => {
    const a = await gw.newKey();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: '{"model":"priced","messages":[{"role":"user","content":"x"}],"max_tokens":1e309}',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({
      type: 'invalid_request_error',
      param: 'max_tokens',
      message: "Invalid value for 'max_tokens': numbers must be finite",
    });
  });
});

describe('a stream cut short', () => {
  test('counts every delta it carried toward its completion tokens, reasoning included', async () => {
    const a = await gw.newKey();
    const base = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'x' };
    up.plan({
      kind: 'stall',
      events: [
        { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
        {
          ...base,
          choices: [
            {
              index: 0,
              delta: { reasoning_content: 'Let me think this through very carefully first.' },
              finish_reason: null,
            },
          ],
        },
        { ...base, choices: [{ index: 0, delta: { content: 'Hello' }, finish_reason: null }] },
      ],
    });
    const res = await chat(a.secret, { model: 'priced', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('Hello')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel(); // the client leaves
    for (let i = 0; i < 100 && !(await db()('usage_records').where('account_id', a.accountId).first()); i++) {
      await gw.settled();
      await new Promise((r) => setTimeout(r, 20));
    }
    const record = await db()('usage_records').where('account_id', a.accountId).first();
    expect(record).toMatchObject({
      status: 499,
      counted: 'tokenizer',
      completion_tokens: countText('Let me think this through very carefully first.Hello'),
    });
  });

  test('the chunk that ends generation waits for the usage after it: a client that leaves on it still pays what the upstream reported', async () => {
    const a = await gw.newKey();
    const events = chatStreamEvents('x', ['Hello'], true, {
      prompt_tokens: 1000,
      completion_tokens: 500,
      total_tokens: 1500,
    });
    up.plan({ kind: 'sse', events: [...events.slice(0, -1), { delayMs: 300 }, events[events.length - 1]] });
    const res = await chat(a.secret, { model: 'priced', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('"finish_reason":"stop"')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel(); // leaves as soon as it sees the end
    await gw.settled();
    expect(await db()('usage_records').where('account_id', a.accountId).first()).toMatchObject({
      counted: 'upstream',
      prompt_tokens: 1000,
      completion_tokens: 500,
    });
  });
});
