/**
 * Money: exact charges from known prices × known usage, holds, the insufficient-quota 429, lowered output
 * allowances, key quotas, rate limits and their headers, the sweeper, and `ledger verify` — on the database in
 * DATABASE_URL (SQLite by default, MariaDB in the second pass).
 */
import net from 'node:net';
import OpenAI from 'openai';
import { FakeOpenAI, chatStreamEvents } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { verifyLedger } from '../../src/billing/verify';
import { costMicros } from '../../src/billing/prices';

let up: FakeOpenAI;
let gw: TestGateway;

// 0.15 USD / M input = 150,000 µUSD per M tokens; 0.60 USD / M output = 600,000
const PRICE = { input: 150_000, output: 600_000 };

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  gw = await startGateway(`
billing: { min_output_tokens: 16, hold_ttl_ms: 60000, sweep_interval_ms: 3600000 }
limits: { rpm: 0, tpm: 0 }
routing: { breaker_failures: 1000 }
providers:
  up: { type: openai, base_url: "${up.url}" }
models:
  - { id: priced, kind: chat, price: { input: 0.15, output: 0.60 }, max_output_tokens: 1000, routes: [ { provider: up } ] }
  - { id: legacy, kind: completion, price: { input: 1.5, output: 2 }, routes: [ { provider: up } ] }
  - { id: embed, kind: embedding, price: { input: 0.02 }, routes: [ { provider: up } ] }
`);
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

async function account(credits: number, key: Parameters<TestGateway['newKey']>[0] = {}) {
  const k = await gw.newKey(key, credits);
  const client = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  return { ...k, client };
}

const db = () => gw.app.db;
const balance = async (id: number) => Number((await db()('accounts').where('id', id).first()).balance_micros);
const ledger = (id: number) => db()('ledger').where('account_id', id).orderBy('id');
const usageOf = (requestId: string) => db()('usage_records').where('request_id', requestId).first();

const answer = (content: string, usage?: object) => ({
  kind: 'json' as const,
  body: { id: 'c1', object: 'chat.completion', created: 1, model: 'x', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null }], ...(usage ? { usage } : {}) },
});

describe('exact charges', () => {
  test('the rule: ceil((prompt × input + completion × output) / 1e6), once per request', () => {
    expect(costMicros(PRICE, 1234, 567)).toBe(526); // 185,100,000 + 340,200,000 = 525,300,000 → 525.3 → 526
    expect(costMicros(PRICE, 10, 0)).toBe(2); // 1.5 → 2
    expect(costMicros(PRICE, 0, 0)).toBe(0);
    expect(costMicros({ input: 2_500_000, output: 10_000_000 }, 1_000_000, 1_000_000)).toBe(12_500_000);
  });

  test('non-streaming, with upstream usage: one usage row for exactly the cost, hold released', async () => {
    const a = await account(1_000_000);
    up.plan(answer('hi', { prompt_tokens: 1234, completion_tokens: 567, total_tokens: 1801 }));
    const { data, response } = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] }).withResponse();
    expect(data.usage?.total_tokens).toBe(1801);
    const rows = await ledger(a.accountId);
    expect(rows.map((r) => [r.kind, Number(r.amount_micros), Number(r.balance_after)])).toEqual([
      ['signup', 1_000_000, 1_000_000],
      ['usage', -526, 999_474],
    ]);
    expect(rows[1]).toMatchObject({ ref: response.headers.get('x-request-id'), model: 'priced', prompt_tokens: 1234, completion_tokens: 567 });
    expect(await usageOf(response.headers.get('x-request-id')!)).toMatchObject({ status: 200, counted: 'upstream', cost_micros: 526, provider: 'up', endpoint: 'chat' });
    const acct = await db()('accounts').where('id', a.accountId).first();
    expect(Number(acct.held_micros)).toBe(0);
    expect(Number((await db()('api_keys').where('id', a.keyId).first()).used_micros)).toBe(526);
    expect(await db()('holds').where('account_id', a.accountId)).toEqual([]);
  });

  test('streaming, with the upstream usage chunk', async () => {
    const a = await account(1_000_000);
    up.plan({ kind: 'sse', events: chatStreamEvents('x', ['a', 'b'], true, { prompt_tokens: 2000, completion_tokens: 1000, total_tokens: 3000 }) });
    const stream = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }], stream: true });
    for await (const _ of stream);
    await settled(a.accountId);
    // 2000 × 150,000 + 1000 × 600,000 = 900,000,000 → 900 µUSD exactly
    expect(await balance(a.accountId)).toBe(1_000_000 - 900);
  });

  test('without upstream usage: the tokenizer count is billed, and recorded as such', async () => {
    const a = await account(1_000_000);
    up.plan(answer('Hello there, friend'));
    const { response } = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    // prompt 8 tokens (framing included), completion 4: 8 × 150,000 + 4 × 600,000 = 3,600,000 → 4 µUSD
    expect(await usageOf(response.headers.get('x-request-id')!)).toMatchObject({ counted: 'tokenizer', prompt_tokens: 8, completion_tokens: 4, cost_micros: 4 });
    expect(await balance(a.accountId)).toBe(1_000_000 - 4);
  });

  test('usage an upstream reports half of, or not as numbers, is not trusted: the tokenizer counts instead', async () => {
    const a = await account(1_000_000);
    up.plan({ kind: 'sse', events: chatStreamEvents('x', ['Hello there, friend'], true, { prompt_tokens: 5 }) });
    const stream = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[chunks.length - 1].usage).toEqual({ prompt_tokens: 8, completion_tokens: 4, total_tokens: 12 });
    up.plan(answer('Hello there, friend', { prompt_tokens: 'many', completion_tokens: -1 }));
    await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'hi' }] });
    await settled(a.accountId);
    const records = await db()('usage_records').where('account_id', a.accountId).orderBy('id');
    expect(records.map((r) => [r.counted, Number(r.prompt_tokens), Number(r.completion_tokens), Number(r.cost_micros)])).toEqual([
      ['tokenizer', 8, 4, 4],
      ['tokenizer', 8, 4, 4],
    ]);
  });

  test('a client that disconnects halfway pays for what was generated', async () => {
    const a = await account(1_000_000);
    up.plan({ kind: 'stall', events: chatStreamEvents('x', ['Hello there, friend'], false, {}).slice(0, 2) });
    const stream = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'hi' }], stream: true });
    for await (const c of stream) if (c.choices[0]?.delta.content) break; // leaves after the first words
    await settled(a.accountId);
    const row = (await ledger(a.accountId)).find((r) => r.kind === 'usage');
    expect(row).toMatchObject({ amount_micros: -4, prompt_tokens: 8, completion_tokens: 4 });
    expect(await db()('usage_records').where('account_id', a.accountId).first()).toMatchObject({ status: 499, counted: 'tokenizer' });
  });

  test('a client that leaves while the request is still being checked: its stream is settled, no hold stays behind', async () => {
    const a = await account(1_000_000);
    // hold requests that carry this header for a moment before their handler runs (like a slow key lookup)
    gw.server.ext('onPreHandler', async (request, h) => {
      if (request.headers['x-test-delay']) await new Promise((r) => setTimeout(r, 300));
      return h.continue;
    });
    const body = JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const socket = net.connect(Number(new URL(gw.url).port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.secret}\r\nContent-Type: application/json\r\n` +
        `x-test-delay: 1\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy(); // gone before the handler starts
    for (let i = 0; i < 100 && !(await db()('usage_records').where('account_id', a.accountId).first()); i++) await new Promise((r) => setTimeout(r, 30));
    expect(await db()('holds').where('account_id', a.accountId)).toEqual([]);
    expect(await db()('usage_records').where('account_id', a.accountId).first()).toMatchObject({ status: 499 });
    expect(Number((await db()('accounts').where('id', a.accountId).first()).held_micros)).toBe(0);
  });

  test('a client that leaves before the answer pays for its prompt only', async () => {
    const a = await account(1_000_000);
    up.plan({ kind: 'hang' });
    const ctrl = new AbortController();
    const pending = a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'hi' }] }, { signal: ctrl.signal }).catch((e) => e);
    for (let i = 0; i < 100 && !(await db()('holds').where('account_id', a.accountId).first()); i++) await new Promise((r) => setTimeout(r, 20));
    ctrl.abort();
    await pending;
    await settled(a.accountId);
    for (let i = 0; i < 100 && !(await db()('usage_records').where('account_id', a.accountId).first()); i++) await new Promise((r) => setTimeout(r, 20));
    // 8 prompt tokens × 150,000 = 1,200,000 → 2 µUSD
    expect(await db()('usage_records').where('account_id', a.accountId).first()).toMatchObject({ status: 499, prompt_tokens: 8, completion_tokens: 0, cost_micros: 2 });
    expect(await balance(a.accountId)).toBe(1_000_000 - 2);
  });

  test('a failed upstream call that produced nothing costs nothing', async () => {
    const a = await account(1_000_000);
    up.plan({ kind: 'json', status: 503, body: {} });
    const e = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] }).catch((err) => err);
    expect(e.status).toBe(502);
    expect(await balance(a.accountId)).toBe(1_000_000);
    expect((await ledger(a.accountId)).map((r) => r.kind)).toEqual(['signup']);
    expect(await db()('usage_records').where('account_id', a.accountId).first()).toMatchObject({ status: 502, cost_micros: 0, counted: 'none' });
    expect(Number((await db()('accounts').where('id', a.accountId).first()).held_micros)).toBe(0);
  });

  test('embeddings are billed for input only; legacy completions by their own prices', async () => {
    const a = await account(1_000_000);
    await a.client.embeddings.create({ model: 'embed', input: ['a', 'b'], encoding_format: 'float' }); // fake usage: 4 tokens × 20,000 → 0.08 → 1
    up.plan({ kind: 'json', body: { id: 'c', object: 'text_completion', created: 1, model: 'x', choices: [{ index: 0, text: 'x', logprobs: null, finish_reason: 'stop' }], usage: { prompt_tokens: 1000, completion_tokens: 1000, total_tokens: 2000 } } });
    await a.client.completions.create({ model: 'legacy', prompt: 'p' }); // 1000 × 1.5 + 1000 × 2 = 3500 µUSD
    expect((await ledger(a.accountId)).filter((r) => r.kind === 'usage').map((r) => Number(r.amount_micros))).toEqual([-1, -3500]);
  });
});

describe('admission', () => {
  test('an account that cannot pay: 429 Insufficient quota, x-should-retry false, no Retry-After, nothing sent upstream', async () => {
    const a = await account(0);
    const before = up.requests.length;
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(res.headers.get('retry-after')).toBeNull();
    expect(await res.json()).toEqual({ error: { message: 'Insufficient quota', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } });
    expect(up.requests.length).toBe(before);
    // the SDK does not retry it (it would, by default, for a 429)
    const sdk = new OpenAI({ apiKey: a.secret, baseURL: `${gw.url}/v1` });
    await expect(sdk.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    expect(up.requests.length).toBe(before);
  });

  test('the output allowance sent upstream is the hold: the model default when the request sets none', async () => {
    const a = await account(1_000_000);
    await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] });
    expect(up.last().body.max_completion_tokens).toBe(1000);
    await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }], max_tokens: 50 });
    expect(up.last().body).toMatchObject({ max_tokens: 50 });
    expect(up.last().body.max_completion_tokens).toBeUndefined();
  });

  test('a balance that covers fewer output tokens than asked lowers the allowance instead of refusing', async () => {
    // prompt "x" is 8 tokens: 1.2 µUSD; 100 µUSD left pays 98 more µUSD / 0.6 = 164 output tokens
    const a = await account(100);
    await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 500 });
    expect(up.last().body.max_completion_tokens).toBe(164);
  });

  test('attachments the gateway cannot count are held at the most they may cost', async () => {
    const a = await account(200); // pays ~1,300 prompt tokens at 0.15 µUSD each, with 16 output tokens
    const image = (detail?: 'low') => ({
      model: 'priced',
      messages: [{ role: 'user' as const, content: [{ type: 'image_url' as const, image_url: { url: 'https://example.com/cat.png', ...(detail ? { detail } : {}) } }] }],
      max_tokens: 16,
    });
    // a full-detail image may cost 1,600 tokens: 240 µUSD, more than the account has
    const refused = await a.client.chat.completions.create(image()).catch((e) => e);
    expect(refused.status).toBe(429);
    expect(refused.error.type).toBe('insufficient_quota');
    // a low-detail image costs 85 tokens
    expect((await a.client.chat.completions.create(image('low'))).object).toBe('chat.completion');
    // a 40 kB PDF is held as ~13,700 tokens
    const pdf = { type: 'file' as const, file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${'A'.repeat(54_000)}` } };
    const big = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: [pdf] }], max_tokens: 16 }).catch((e) => e);
    expect(big.status).toBe(429);
  });

  test('below the minimum useful allowance: refused', async () => {
    const a = await account(10); // pays 8 × 0.15 + 14 × 0.6 < 10 µUSD... fewer than 16 output tokens
    const e = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] }).catch((err) => err);
    expect(e.status).toBe(429);
    expect(e.error).toMatchObject({ type: 'insufficient_quota', message: 'Insufficient quota' });
  });

  test('a key quota smaller than the balance: spent, then 429 Insufficient quota', async () => {
    const a = await account(1_000_000, { quotaMicros: 1000 });
    up.plan(answer('a', { prompt_tokens: 2000, completion_tokens: 1000, total_tokens: 3000 })); // 900 µUSD
    await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }], max_tokens: 100 });
    const e = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }], max_tokens: 500 }).catch((err) => err);
    // 100 µUSD left on the key pays for 164 output tokens: lowered, not refused
    expect(e.status).toBeUndefined();
    expect(up.last().body.max_tokens).toBe(164);
    up.plan(answer('a', { prompt_tokens: 0, completion_tokens: 160, total_tokens: 160 })); // 96 µUSD
    await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] });
    const refused = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] }).catch((err) => err);
    expect(refused.status).toBe(429);
    expect(refused.error.type).toBe('insufficient_quota');
    const key = await db()('api_keys').where('id', a.keyId).first();
    expect(Number(key.used_micros)).toBeLessThanOrEqual(1000);
  });
});

describe('rate limits', () => {
  test('requests per minute: headers on every answer, then 429 rate_limit_exceeded with retry-after', async () => {
    const a = await account(1_000_000, { rpmLimit: 2 });
    const first = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] }).withResponse();
    expect(first.response.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(first.response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect(first.response.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?(ms|s)$|^\d+m\d+(\.\d+)?s$/);
    // on a stream too, before the first byte
    const raw = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'x' }], stream: true }),
    });
    expect(raw.headers.get('content-type')).toContain('text/event-stream');
    expect(raw.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    await raw.text();
    const third = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(third.status).toBe(429);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(third.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(await third.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limit_exceeded' } });
  });

  test('tokens per minute: prompt + output allowance count; over the limit, 429', async () => {
    const a = await account(1_000_000, { tpmLimit: 300 });
    const ok = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }], max_tokens: 100 }).withResponse();
    expect(ok.response.headers.get('x-ratelimit-limit-tokens')).toBe('300');
    const e = await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }], max_tokens: 290 }).catch((err) => err);
    expect(e.status).toBe(429);
    expect(e.error.code).toBe('rate_limit_exceeded');
    expect(e.error.message).toContain('tokens per minute');
  });
});

describe('holds that outlive their process', () => {
  test('the sweeper settles an expired hold at its recorded progress, once, and ledger verify is clean', async () => {
    const a = await account(1_000_000);
    // a hold as a dead process leaves it: 500 µUSD held, 120 µUSD certainly spent when it last renewed its lease
    await db().transaction(async (trx) => {
      await trx('accounts').where('id', a.accountId).increment('held_micros', 500);
      await trx('api_keys').where('id', a.keyId).increment('held_micros', 500);
      await trx('holds').insert({ request_id: `req_dead_${a.accountId}`, endpoint: 'chat', account_id: a.accountId, key_id: a.keyId, model: 'priced', amount_micros: 500, progress_micros: 120, prompt_tokens: 100, completion_tokens: 175, expires_at: Date.now() - 60_000, created_at: Date.now() - 120_000 });
    });
    expect((await verifyLedger(db())).stale_holds.map((h) => h.request_id)).toContain(`req_dead_${a.accountId}`);
    await Promise.all([gw.app.billing.sweep(), gw.app.billing.sweep()]); // two sweepers at once: one settles it
    expect(await balance(a.accountId)).toBe(1_000_000 - 120);
    expect((await ledger(a.accountId)).filter((r) => r.kind === 'usage')).toHaveLength(1);
    expect(await db()('usage_records').where('request_id', `req_dead_${a.accountId}`).first()).toMatchObject({ counted: 'checkpoint', cost_micros: 120 });
    const v = await verifyLedger(db());
    expect(v.problems.filter((p) => p.account_id === a.accountId)).toEqual([]);
    expect(v.stale_holds.filter((h) => h.account_id === a.accountId)).toEqual([]);
  });

  test('ledger verify reports an account whose balance does not match its ledger', async () => {
    const a = await account(1_000);
    await db()('accounts').where('id', a.accountId).increment('balance_micros', 5);
    const v = await verifyLedger(db());
    expect(v.ok).toBe(false);
    expect(v.problems).toContainEqual({ account_id: a.accountId, problem: 'balance differs from the sum of its ledger rows', expected: 1000, actual: 1005 });
    await db()('accounts').where('id', a.accountId).decrement('balance_micros', 5);
  });
});

/** Streams settle as they end, a moment after the client has read the last byte. */
async function settled(accountId: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await db()('holds').where('account_id', accountId)).length === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the hold was not settled');
}
