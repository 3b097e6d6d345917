/**
 * Money: exact charges from known prices × known usage, holds, the insufficient-quota 429, lowered output
 * allowances, key quotas, rate limits and their headers, the sweeper, and `ledger verify` — on the database in
 * DATABASE_URL (SQLite by default, MariaDB in the second pass).
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import OpenAI from 'openai';
import pino from 'pino';
import { getKey } from '../../src/accounts/keys';
import { Billing } from '../../src/billing/billing';
import { FakeOpenAI, chatStreamEvents } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { verifyLedger } from '../../src/billing/verify';
import { MYSQL_STATEMENTS } from '../../src/db';
import { Price } from '../../src/billing/prices';
import { inspect, promptBound } from '../../src/gateway/bound';
import { usage } from '../../src/usage';

let up: FakeOpenAI;
let gw: TestGateway;

// 0.15 USD / M input = 150,000 µUSD per M tokens; 0.60 USD / M output = 600,000
const PRICE = new Price({
  input: 150_000,
  output: 600_000,
  cached_input: 150_000,
  cache_write: 150_000,
  cache_write_1h: 150_000,
});
const MODEL = { image_tokens: 4_800, file_tokens: 300_000 };
/** The prompt bound of a body (gateway/bound.ts): what a hold counts for the prompt. */
const bound = (body: object) => promptBound(inspect(body), MODEL);
/** The most output tokens `budget` pays for after the prompt of `body`. */
const affordable = (body: object, budget: number) => PRICE.affordableOutput(bound(body), budget)!;

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  gw = await startGateway(`
billing: { min_output_tokens: 16, hold_ttl_ms: 60000, sweep_interval_ms: 3600000, lease_idle_ms: 500 }
limits: { rpm: 0, tpm: 0 }
routing: { breaker_failures: 1000 }
providers:
  up: { type: openai, base_url: "${up.url}" }
  up1: { type: openai, base_url: "${up.url}", output_limit: max_completion_tokens }
models:
  - { id: priced, kind: chat, price: { input: 0.15, output: 0.60 }, max_output_tokens: 1000, routes: [ { provider: up } ] }
  - { id: one-field, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: up1 } ] }
  - { id: premium, kind: chat, price: { input: 0.3, output: 1.2 }, allow: [priority, web_search], routes: [ { provider: up } ] }
  - { id: legacy, kind: completion, price: { input: 1.5, output: 2 }, routes: [ { provider: up } ] }
  - { id: embed, kind: embedding, price: { input: 0.02 }, routes: [ { provider: up } ] }
  - { id: free, kind: chat, routes: [ { provider: up } ] }
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
const connections = () =>
  new Promise<number>((resolve, reject) => gw.server.listener.getConnections((e, n) => (e ? reject(e) : resolve(n))));
const balance = async (id: number) => Number((await db()('accounts').where('id', id).first()).balance_micros);
const ledger = (id: number) => db()('ledger').where('account_id', id).orderBy('id');
const usageOf = (requestId: string) => db()('usage_records').where('request_id', requestId).first();

const answer = (content: string, usage?: object) => ({
  kind: 'json' as const,
  body: {
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: 'x',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null }],
    ...(usage ? { usage } : {}),
  },
});

describe('exact charges', () => {
  test('the rule: ceil((prompt × input + completion × output) / 1e6), once per request', () => {
    expect(PRICE.cost(usage(1234, 567))).toBe(526); // 185,100,000 + 340,200,000 = 525,300,000 → 525.3 → 526
    expect(PRICE.cost(usage(10, 0))).toBe(2); // 1.5 → 2
    expect(PRICE.cost(usage(0, 0))).toBe(0);
    expect(
      new Price({
        input: 2_500_000,
        output: 10_000_000,
        cached_input: 2_500_000,
        cache_write: 2_500_000,
        cache_write_1h: 2_500_000,
      }).cost(usage(1_000_000, 1_000_000)),
    ).toBe(12_500_000);
  });

  test('non-streaming, with upstream usage: one usage row for exactly the cost, hold released', async () => {
    const a = await account(1_000_000);
    up.plan(answer('hi', { prompt_tokens: 1234, completion_tokens: 567, total_tokens: 1801 }));
    const { data, response } = await a.client.chat.completions
      .create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] })
      .withResponse();
    expect(data.usage?.total_tokens).toBe(1801);
    await gw.settled();
    const rows = await ledger(a.accountId);
    expect(rows.map((r) => [r.kind, Number(r.amount_micros), Number(r.balance_after)])).toEqual([
      ['signup', 1_000_000, 1_000_000],
      ['usage', -526, 999_474],
    ]);
    expect(rows[1]).toMatchObject({
      ref: response.headers.get('x-request-id'),
      model: 'priced',
      prompt_tokens: 1234,
      completion_tokens: 567,
    });
    expect(await usageOf(response.headers.get('x-request-id')!)).toMatchObject({
      status: 200,
      counted: 'upstream',
      cost_micros: 526,
      provider: 'up',
      endpoint: 'chat',
    });
    expect(Number((await db()('api_keys').where('id', a.keyId).first()).used_micros)).toBe(526);
    await noHoldBeyondLeases(a.accountId);
  });

  test('streaming, with the upstream usage chunk', async () => {
    const a = await account(1_000_000);
    up.plan({
      kind: 'sse',
      events: chatStreamEvents('x', ['a', 'b'], true, {
        prompt_tokens: 2000,
        completion_tokens: 1000,
        total_tokens: 3000,
      }),
    });
    const stream = await a.client.chat.completions.create({
      model: 'priced',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    for await (const _ of stream);
    await gw.settled();
    // 2000 × 150,000 + 1000 × 600,000 = 900,000,000 → 900 µUSD exactly
    expect(await balance(a.accountId)).toBe(1_000_000 - 900);
  });

  test('without upstream usage: the tokenizer count is billed, and recorded as such', async () => {
    const a = await account(1_000_000);
    up.plan(answer('Hello there, friend'));
    const { response } = await a.client.chat.completions
      .create({ model: 'priced', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    await gw.settled();
    // prompt 8 tokens (framing included), completion 4: 8 × 150,000 + 4 × 600,000 = 3,600,000 → 4 µUSD
    expect(await usageOf(response.headers.get('x-request-id')!)).toMatchObject({
      counted: 'tokenizer',
      prompt_tokens: 8,
      completion_tokens: 4,
      cost_micros: 4,
    });
    expect(await balance(a.accountId)).toBe(1_000_000 - 4);
  });

  test('usage an upstream reports half of, or not as numbers, is not trusted: the tokenizer counts instead', async () => {
    const a = await account(1_000_000);
    up.plan({ kind: 'sse', events: chatStreamEvents('x', ['Hello there, friend'], true, { prompt_tokens: 5 }) });
    const stream = await a.client.chat.completions.create({
      model: 'priced',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[chunks.length - 1].usage).toEqual({ prompt_tokens: 8, completion_tokens: 4, total_tokens: 12 });
    up.plan(answer('Hello there, friend', { prompt_tokens: 'many', completion_tokens: -1 }));
    await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'hi' }] });
    await gw.settled();
    const records = await db()('usage_records').where('account_id', a.accountId).orderBy('id');
    expect(
      records.map((r) => [r.counted, Number(r.prompt_tokens), Number(r.completion_tokens), Number(r.cost_micros)]),
    ).toEqual([
      ['tokenizer', 8, 4, 4],
      ['tokenizer', 8, 4, 4],
    ]);
  });

  test('a client that disconnects halfway pays for what was generated', async () => {
    const a = await account(1_000_000);
    up.plan({ kind: 'stall', events: chatStreamEvents('x', ['Hello there, friend'], false, {}).slice(0, 2) });
    const stream = await a.client.chat.completions.create({
      model: 'priced',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    for await (const c of stream) if (c.choices[0]?.delta.content) break; // leaves after the first words
    await gw.settled();
    const row = (await ledger(a.accountId)).find((r) => r.kind === 'usage');
    expect(row).toMatchObject({ amount_micros: -4, prompt_tokens: 8, completion_tokens: 4 });
    expect(await db()('usage_records').where('account_id', a.accountId).first()).toMatchObject({
      status: 499,
      counted: 'tokenizer',
    });
  });

  test('a client that leaves while the request is still being checked: nothing goes upstream, nothing is held or charged', async () => {
    const a = await account(1_000_000);
    // the key lookup takes a moment (like a cold one against a busy database): the client leaves meanwhile
    const authenticate = gw.app.keys.authenticate.bind(gw.app.keys);
    let checked!: () => void;
    const wasChecked = new Promise<void>((r) => (checked = r));
    gw.app.keys.authenticate = async (authorization) => {
      await new Promise((r) => setTimeout(r, 300));
      checked();
      return authenticate(authorization);
    };
    const sent = up.requests.length;
    const body = JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const socket = net.connect(Number(new URL(gw.url).port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.secret}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy(); // gone before the handler starts
    await wasChecked;
    await gw.server.app.api.idle(10_000);
    await gw.settled();
    gw.app.keys.authenticate = authenticate;
    expect(up.requests.length).toBe(sent);
    expect(await db()('usage_records').where('account_id', a.accountId)).toEqual([]);
    expect((await ledger(a.accountId)).map((r) => r.kind)).toEqual(['signup']);
    await noHoldBeyondLeases(a.accountId);
  });

  test('a client that leaves before a JSON answer pays for the whole answer the upstream billed (it generates it anyway)', async () => {
    const a = await account(1_000_000);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const answer = {
      id: 'chatcmpl-late',
      object: 'chat.completion',
      created: 1,
      model: 'x',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'a late answer' }, logprobs: null, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 8, completion_tokens: 20, total_tokens: 28 },
    };
    up.plan({ kind: 'json', body: answer, wait: released });
    const ctrl = new AbortController();
    const before = up.requests.length;
    const pending = a.client.chat.completions
      .create({ model: 'priced', messages: [{ role: 'user', content: 'hi' }] }, { signal: ctrl.signal })
      .catch((e) => e);
    for (let i = 0; i < 100 && up.requests.length === before; i++) await new Promise((r) => setTimeout(r, 20)); // the upstream has it
    const open = await connections();
    ctrl.abort();
    await pending;
    while ((await connections()) >= open) await new Promise((r) => setTimeout(r, 10)); // the gateway saw it leave
    release(); // the upstream finishes the answer nobody waits for, and reports its usage
    for (let i = 0; i < 100 && !(await db()('usage_records').where('account_id', a.accountId).first()); i++) {
      await gw.settled();
      await new Promise((r) => setTimeout(r, 20));
    }
    // 8 × 150,000 + 20 × 600,000 = 13,200,000 → 14 µUSD
    expect(await db()('usage_records').where('account_id', a.accountId).first()).toMatchObject({
      status: 499,
      prompt_tokens: 8,
      completion_tokens: 20,
      counted: 'upstream',
      cost_micros: 14,
    });
    expect(await balance(a.accountId)).toBe(1_000_000 - 14);
  });

  test('a failed upstream call that produced nothing costs nothing', async () => {
    const a = await account(1_000_000);
    up.plan({ kind: 'json', status: 503, body: {} });
    const e = await a.client.chat.completions
      .create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] })
      .catch((err) => err);
    expect(e.status).toBe(502);
    await gw.settled();
    expect(await balance(a.accountId)).toBe(1_000_000);
    expect((await ledger(a.accountId)).map((r) => r.kind)).toEqual(['signup']);
    expect(await db()('usage_records').where('account_id', a.accountId).first()).toMatchObject({
      status: 502,
      cost_micros: 0,
      counted: 'none',
    });
    await noHoldBeyondLeases(a.accountId);
  });

  test('embeddings are billed for input only; legacy completions by their own prices', async () => {
    const a = await account(1_000_000);
    await a.client.embeddings.create({ model: 'embed', input: ['a', 'b'], encoding_format: 'float' }); // fake usage: 4 tokens × 20,000 → 0.08 → 1
    up.plan({
      kind: 'json',
      body: {
        id: 'c',
        object: 'text_completion',
        created: 1,
        model: 'x',
        choices: [{ index: 0, text: 'x', logprobs: null, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1000, completion_tokens: 1000, total_tokens: 2000 },
      },
    });
    await a.client.completions.create({ model: 'legacy', prompt: 'p' }); // 1000 × 1.5 + 1000 × 2 = 3500 µUSD
    await gw.settled();
    expect((await ledger(a.accountId)).filter((r) => r.kind === 'usage').map((r) => Number(r.amount_micros))).toEqual([
      -1, -3500,
    ]);
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
    expect(await res.json()).toEqual({
      error: {
        message: 'Insufficient quota',
        type: 'insufficient_quota',
        param: null,
        code: 'insufficient_quota',
        reason: 'account_balance',
      },
    });
    expect(up.requests.length).toBe(before);
    // the SDK does not retry it (it would, by default, for a 429)
    const sdk = new OpenAI({ apiKey: a.secret, baseURL: `${gw.url}/v1` });
    await expect(
      sdk.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    expect(up.requests.length).toBe(before);
  });

  test('the output allowance sent upstream is the hold, in every limit field the upstream may read', async () => {
    const a = await account(1_000_000);
    // this upstream (not OpenAI's own) may read either field: both carry the allowance
    await a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] });
    expect(up.last().body).toMatchObject({ max_completion_tokens: 1000, max_tokens: 1000 });
    await a.client.chat.completions.create({
      model: 'priced',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 50,
    });
    expect(up.last().body).toMatchObject({ max_completion_tokens: 50, max_tokens: 50 });
    // both sent: the smaller one is the allowance, and both say it (an upstream reading max_tokens only is bounded too)
    await a.client.chat.completions.create({
      model: 'priced',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 1_000_000,
      max_completion_tokens: 30,
    });
    expect(up.last().body).toMatchObject({ max_completion_tokens: 30, max_tokens: 30 });
    // an upstream configured to read one field (OpenAI refuses both at once) gets that one only
    await a.client.chat.completions.create({
      model: 'one-field',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 40,
    });
    expect(up.last().body.max_completion_tokens).toBe(40);
    expect(up.last().body.max_tokens).toBeUndefined();
  });

  test('a balance that covers fewer output tokens than asked lowers the allowance instead of refusing', async () => {
    const a = await account(100);
    const body = { model: 'priced', messages: [{ role: 'user' as const, content: 'x' }], max_completion_tokens: 500 };
    await a.client.chat.completions.create(body);
    expect(up.last().body.max_completion_tokens).toBe(affordable(body, 100));
    expect(affordable(body, 100)).toBeLessThan(500);
  });

  test('n choices, best_of and lists of prompts multiply the allowance: a short balance lowers each choice', async () => {
    const a = await account(100);
    const chat = { model: 'priced', messages: [{ role: 'user' as const, content: 'x' }], max_tokens: 500, n: 4 };
    await a.client.chat.completions.create(chat);
    expect(up.last().body.max_tokens).toBe(Math.floor(affordable(chat, 100) / 4));
    const legacy = { model: 'legacy', prompt: ['a', 'b', 'c'], best_of: 2, n: 1, max_tokens: 500 };
    const b = await account(2_000);
    up.plan({
      kind: 'json',
      body: {
        id: 'c',
        object: 'text_completion',
        created: 1,
        model: 'x',
        choices: [{ index: 0, text: 'x', logprobs: null, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 },
      },
    });
    await b.client.completions.create(legacy);
    const perChoice = new Price({
      input: 1_500_000,
      output: 2_000_000,
      cached_input: 1_500_000,
      cache_write: 1_500_000,
      cache_write_1h: 1_500_000,
    }).affordableOutput(bound(legacy), 2_000)!;
    expect(up.last().body.max_tokens).toBe(Math.floor(perChoice / 6)); // 3 prompts × best_of 2
  });

  test('everything forwarded counts toward the prompt bound: functions, response_format, unknown fields', async () => {
    // The same request pays with and without a large field only when the field is small enough: it is held.
    const big = 'x'.repeat(20_000); // 20 kB ≥ 20,000 tokens at most: 3,000 µUSD of prompt
    const base = { model: 'priced', messages: [{ role: 'user', content: 'x' }], max_tokens: 16 };
    const fields: Record<string, unknown>[] = [
      { functions: [{ name: 'f', description: big, parameters: { type: 'object', properties: {} } }] },
      {
        response_format: {
          type: 'json_schema',
          json_schema: { name: 's', schema: { type: 'object', description: big } },
        },
      },
      { some_future_field: big },
      { messages: [{ role: 'user', content: 'x', name: 'n', extra: big }] },
    ];
    for (const f of fields) {
      const a = await account(1_000);
      const before = up.requests.length;
      const res = await rawChat(a.secret, { ...base, ...f });
      expect({ field: Object.keys(f)[0], status: res.status }).toEqual({ field: Object.keys(f)[0], status: 429 });
      expect(up.requests.length).toBe(before);
      expect((await rawChat(a.secret, base)).status).toBe(200);
    }
  });

  test('a predicted output adds its size to the allowance (rejected prediction tokens are billed as output)', async () => {
    const a = await account(1_000_000);
    const prediction = { type: 'content', content: 'y'.repeat(300) };
    await rawChat(a.secret, {
      model: 'priced',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 50,
      prediction,
    });
    expect(up.last().body).toMatchObject({ max_tokens: 350, prediction });
  });

  test('attachments are held at their worst case whatever else the part carries; stored files and (unless allowed) audio are refused', async () => {
    const a = await account(500); // pays ~3,300 prompt tokens: less than one image at the stated worst case (4,800 tokens)
    const image = (part: object) => ({
      model: 'priced',
      messages: [{ role: 'user', content: [part] }],
      max_tokens: 16,
    });
    for (const part of [
      { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } }, // other providers ignore `detail`
      { type: 'image_url', text: '', image_url: { url: 'https://example.com/cat.png' } }, // not "0 tokens of text"
    ]) {
      const res = await rawChat(a.secret, image(part));
      expect(res.status).toBe(429);
      expect(((await res.json()) as any).error.type).toBe('insufficient_quota');
    }
    // an inline PDF: up to 100 pages of 3,000 tokens
    const pdf = {
      type: 'file',
      file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${'A'.repeat(400)}` },
    };
    expect((await rawChat(a.secret, image(pdf))).status).toBe(429);
    const rich = await account(1_000_000);
    const stored = await rawChat(rich.secret, image({ type: 'file', file: { file_id: 'file-abc' } }));
    expect(stored.status).toBe(400);
    expect(((await stored.json()) as any).error.message).toContain('file_id');
    const audio = await rawChat(
      rich.secret,
      image({ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }),
    );
    expect(audio.status).toBe(400);
    expect(((await audio.json()) as any).error.message).toBe(
      'Model priced does not take audio input through this gateway',
    );
  });

  test('features that raise what the upstream charges: priority tier stripped, audio output and web search refused, unless the model allows them', async () => {
    const a = await account(1_000_000);
    const base = { messages: [{ role: 'user', content: 'x' }] };
    expect((await rawChat(a.secret, { model: 'priced', ...base, service_tier: 'priority' })).status).toBe(200);
    expect(up.last().body.service_tier).toBeUndefined();
    expect((await rawChat(a.secret, { model: 'priced', ...base, service_tier: 'flex' })).status).toBe(200);
    expect(up.last().body.service_tier).toBe('flex');
    for (const [field, value] of [
      ['modalities', ['text', 'audio']],
      ['audio', { voice: 'alloy', format: 'wav' }],
      ['web_search_options', {}],
    ] as const) {
      const res = await rawChat(a.secret, { model: 'priced', ...base, [field]: value });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.param).toBe(field === 'modalities' ? 'modalities' : field);
    }
    // a model whose price covers them passes them on
    expect(
      (await rawChat(a.secret, { model: 'premium', ...base, service_tier: 'priority', web_search_options: {} })).status,
    ).toBe(200);
    expect(up.last().body).toMatchObject({ service_tier: 'priority', web_search_options: {} });
  });

  test('below the minimum useful allowance: refused', async () => {
    const a = await account(10); // pays 8 × 0.15 + 14 × 0.6 < 10 µUSD... fewer than 16 output tokens
    const e = await a.client.chat.completions
      .create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] })
      .catch((err) => err);
    expect(e.status).toBe(429);
    expect(e.error).toMatchObject({ type: 'insufficient_quota', message: 'Insufficient quota' });
  });

  test('a key quota smaller than the balance: spent, then 429 Insufficient quota', async () => {
    const a = await account(1_000_000, { quotaMicros: 1000 });
    up.plan(answer('a', { prompt_tokens: 2000, completion_tokens: 1000, total_tokens: 3000 })); // 900 µUSD
    await a.client.chat.completions.create({
      model: 'priced',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 100,
    });
    const body = { model: 'priced', messages: [{ role: 'user' as const, content: 'x' }], max_tokens: 500 };
    up.plan(answer('a', { prompt_tokens: 0, completion_tokens: 160, total_tokens: 160 })); // 96 µUSD
    const e = await a.client.chat.completions.create(body).catch((err) => err);
    // 100 µUSD left on the key pays for fewer output tokens: lowered, not refused
    expect(e.status).toBeUndefined();
    expect(up.last().body.max_tokens).toBe(affordable(body, 100));
    await gw.settled();
    const key = await db()('api_keys').where('id', a.keyId).first();
    expect(Number(key.used_micros)).toBeLessThanOrEqual(1000);
    const refused = await a.client.chat.completions
      .create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] })
      .catch((err) => err);
    expect(refused.status).toBe(429);
    // the same message and code as an empty account, and the cause the SDK passes through: this key's limit
    expect(refused.error).toMatchObject({
      type: 'insufficient_quota',
      message: 'Insufficient quota',
      reason: 'key_quota',
    });
  });

  test('a key with no money is refused before its body is read or measured', async () => {
    const a = await account(0);
    const before = up.requests.length;
    // a body that is not even JSON: the 429 comes first
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(res.status).toBe(429);
    expect(up.requests.length).toBe(before);
  });
});

describe('credit leases and write-behind settlement', () => {
  test('a funded key takes one lease and no per-request hold; charges are written in batches; the lease goes back when idle', async () => {
    const a = await account(10_000_000);
    await Promise.all(
      Array.from({ length: 20 }, () =>
        a.client.chat.completions.create({
          model: 'priced',
          messages: [{ role: 'user', content: 'x' }],
          max_tokens: 20,
        }),
      ),
    );
    const leases = await db()('leases').where('account_id', a.accountId);
    expect(leases).toHaveLength(1);
    expect(await db()('holds').where('account_id', a.accountId)).toEqual([]);
    await gw.settled();
    const rows = (await ledger(a.accountId)).filter((r) => r.kind === 'usage');
    expect(rows).toHaveLength(20);
    const charged = -rows.reduce((n, r) => n + Number(r.amount_micros), 0);
    expect(await balance(a.accountId)).toBe(10_000_000 - charged);
    // the balance after each row runs down in order
    expect(rows.map((r) => Number(r.balance_after))).toEqual(
      rows.map((_r, i) => 10_000_000 - rows.slice(0, i + 1).reduce((n, x) => n - Number(x.amount_micros), 0)),
    );
    await noHoldBeyondLeases(a.accountId);
    // idle past lease_idle_ms: the next renewal gives the money back
    await new Promise((r) => setTimeout(r, 700));
    await gw.app.billing.renew();
    expect(await db()('leases').where('account_id', a.accountId)).toEqual([]);
    expect(Number((await db()('accounts').where('id', a.accountId).first()).held_micros)).toBe(0);
  });

  (process.env.DATABASE_URL?.startsWith('mysql') ? test : test.skip)(
    "MySQL: the batches' prepared statements are kept in a cache sized for them, on every pooled connection",
    async () => {
      const a = await account(10_000_000);
      await Promise.all(
        Array.from({ length: 5 }, () =>
          a.client.chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] }),
        ),
      );
      await gw.settled();
      expect((await ledger(a.accountId)).filter((r) => r.kind === 'usage')).toHaveLength(5);
      const client = db().client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): unknown };
      const conn = (await client.acquireConnection()) as { _statements: { max: number } };
      try {
        expect(conn._statements.max).toBe(MYSQL_STATEMENTS); // mysql2's default: 16,000, allocated at once
      } finally {
        await client.releaseConnection(conn);
      }
    },
  );

  test('a gateway that answers faster than its database writes waits for the batch under way: its queue of settlements stays bounded', async () => {
    // A process of its own with batches of 5 rows and no timer: requests admitted and settled one after the other as
    // fast as they go. Without back-pressure every one of them was queued before the first batch was written.
    const a = await account(10_000_000);
    const billing = new Billing(
      db(),
      { ...gw.app.config.billing, flush_rows: 5, flush_ms: 60_000 },
      pino({ level: 'silent' }),
    );
    const key = (await getKey(db(), a.keyId))!;
    const model = gw.app.config.models.find((m) => m.id === 'priced')!;
    const flushes = jest.spyOn(billing, 'flush');
    let most = 0;
    for (let i = 0; i < 200; i++) {
      const admitted = await billing.admit({
        requestId: `req_backlog_${a.keyId}_${i}`,
        principal: { key, accountId: a.accountId },
        model,
        endpoint: 'chat',
        promptTokens: 100,
        outputTokens: 50,
        promptBytes: 400,
      });
      await admitted.settle({ status: 200, used: { provider: 'up', counted: 'upstream', usage: usage(100, 50) } });
      most = Math.max(most, billing.depth.queued);
    }
    await billing.settled();
    await billing.stop();
    expect(most).toBeLessThanOrEqual(4 * 5 + 1); // BACKLOG_BATCHES batches, and the one settled while waiting
    // A write is started per batch, not per settlement queued behind a write under way (each of those waited, kept
    // in memory and woken at every batch: 224 calls here before, tens of thousands a second under load).
    expect(flushes.mock.calls.length).toBeLessThanOrEqual(2 * (200 / 5) + 5);
    expect((await ledger(a.accountId)).filter((r) => r.kind === 'usage')).toHaveLength(200);
    expect(await balance(a.accountId)).toBe(10_000_000 - 200 * 45);
  });

  test('an upstream that bills more than the account can pay: the charge stops at what it can pay, the shortfall is its own ledger row, reported by ledger verify', async () => {
    const a = await account(200); // a per-request hold
    const warned = jest.spyOn(gw.app.log, 'warn');
    up.plan(answer('a', { prompt_tokens: 1_000_000, completion_tokens: 0, total_tokens: 1_000_000 })); // 150,000 µUSD
    await a.client.chat.completions.create({
      model: 'priced',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 16,
    });
    await gw.settled();
    // never silent: a warning in the log, naming the account and what was not covered
    expect(warned).toHaveBeenCalledWith(
      expect.objectContaining({ account: a.accountId, uncovered_micros: 149_800 }),
      'the upstream billed more than was held: shortfall recorded',
    );
    warned.mockRestore();
    expect(await balance(a.accountId)).toBe(0);
    const rows = await ledger(a.accountId);
    expect(
      rows.map((r) => [
        r.kind,
        Number(r.amount_micros),
        r.uncovered_micros === null ? null : Number(r.uncovered_micros),
      ]),
    ).toEqual([
      ['signup', 200, null],
      ['usage', -200, null],
      ['shortfall', 0, 149_800],
    ]);
    const v = await verifyLedger(db());
    expect(v.problems.filter((p) => p.account_id === a.accountId)).toEqual([]);
    expect(v.shortfalls).toContainEqual({ account_id: a.accountId, requests: 1, uncovered_micros: 149_800 });
    // and `switchyard ledger verify` lists it, with a warning on stderr
    const cli = await new Promise<{ stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        ['-r', 'tsx/cjs', '-e', "require('./src/cli.ts').main(process.argv.slice(1))", '--', 'ledger', 'verify'],
        { cwd: path.resolve(__dirname, '../..'), env: { ...process.env, LOG_LEVEL: 'silent' } },
        (_e, stdout, stderr) => resolve({ stdout, stderr }),
      ),
    );
    expect(JSON.parse(cli.stdout).shortfalls).toContainEqual({
      account_id: a.accountId,
      requests: 1,
      uncovered_micros: 149_800,
    });
    expect(cli.stderr).toContain(
      `warning: account ${a.accountId}: upstreams billed 0.149800 USD more than it could pay (1 requests)`,
    );
    // on a lease: the same, never beyond what the lease holds
    const b = await account(1_000_000);
    up.plan(answer('a', { prompt_tokens: 100_000_000, completion_tokens: 0, total_tokens: 100_000_000 })); // 15 USD
    await b.client.chat.completions.create({
      model: 'priced',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 16,
    });
    await gw.settled();
    const shortfall = (await ledger(b.accountId)).find((r) => r.kind === 'shortfall');
    expect(Number(shortfall.uncovered_micros)).toBeGreaterThan(0);
    expect(await balance(b.accountId)).toBeGreaterThanOrEqual(0);
    expect((await verifyLedger(db())).problems.filter((p) => p.account_id === b.accountId)).toEqual([]);
  });
});

/**
 * Processes admitting requests of one key at once, each a Billing on the test's database (a gateway process), not
 * started (no sweeps or renewals). Each request asks 45 µUSD at worst (100 prompt and 50 output tokens of `priced`)
 * and is settled at that. Returns what each admission came to: 'served', or the refusal's message.
 */
async function admitAtOnce(
  processes: Billing[],
  perProcess: number,
  accountId: number,
  keyId: number,
): Promise<string[]> {
  const key = (await getKey(db(), keyId))!;
  const model = gw.app.config.models.find((m) => m.id === 'priced')!;
  const admitted = await Promise.all(
    processes.flatMap((p, i) =>
      Array.from({ length: perProcess }, (_, j) =>
        p
          .admit({
            requestId: `req_burst_${keyId}_${i}_${j}`,
            principal: { key, accountId },
            model,
            endpoint: 'chat',
            promptTokens: 100,
            outputTokens: 50,
            promptBytes: 400,
          })
          .then(
            (a) => a,
            (e: Error) => e.message,
          ),
      ),
    ),
  );
  // Settled once every admission is decided: the leases are at their fullest while all of them are in flight.
  await Promise.all(
    admitted.map(
      (a) =>
        typeof a !== 'string' &&
        a.settle({ status: 200, used: { provider: 'up', counted: 'upstream', usage: usage(100, 50) } }),
    ),
  );
  await Promise.all(processes.map((p) => p.settled()));
  await Promise.all(processes.map((p) => p.stop()));
  return admitted.map((a) => (typeof a === 'string' ? a : 'served'));
}

describe('credit leases opened at once', () => {
  const processes = (n: number) =>
    Array.from({ length: n }, () => new Billing(db(), gw.app.config.billing, pino({ level: 'silent' })));

  test('requests of a fresh key that arrive together in one process wait for the one lease being opened instead of each opening its own (eight of those reserved the whole balance, and the rest were refused)', async () => {
    const a = await account(1_000_000); // 1 USD: a lease is an eighth of it; a request asks 45 µUSD
    let opened = 0; // leases this process opened (inserted), whether or not it kept them
    const count = (q: { sql: string }) => /^insert into .leases./i.test(q.sql) && opened++;
    db().on('query', count);
    const outcomes = await admitAtOnce(processes(1), 40, a.accountId, a.keyId).finally(() => db().off('query', count));
    expect(outcomes.filter((o) => o !== 'served')).toEqual([]);
    expect(opened).toBe(1);
    expect(await balance(a.accountId)).toBe(1_000_000 - 40 * 45);
    expect(await db()('leases').where('account_id', a.accountId)).toEqual([]); // given back at stop()
    expect(Number((await db()('accounts').where('id', a.accountId).first()).held_micros)).toBe(0);
    expect((await verifyLedger(db())).problems.filter((p) => p.account_id === a.accountId)).toEqual([]);
  });

  test('processes that open leases of one key at once each take a share of what is left when they reserve, not of what they all read before any of them did: none is refused', async () => {
    const a = await account(1_000_000);
    // Nine processes read 1 USD available before any of them reserves: eight eighths of it would be all of it.
    const outcomes = await admitAtOnce(processes(9), 1, a.accountId, a.keyId);
    expect(outcomes.filter((o) => o !== 'served')).toEqual([]);
    expect(await balance(a.accountId)).toBe(1_000_000 - 9 * 45);
    expect(await db()('leases').where('account_id', a.accountId)).toEqual([]);
    expect(Number((await db()('accounts').where('id', a.accountId).first()).held_micros)).toBe(0);
    expect((await verifyLedger(db())).problems.filter((p) => p.account_id === a.accountId)).toEqual([]);
  });
});

describe('rate limits', () => {
  test('requests per minute: headers on every answer, then 429 rate_limit_exceeded with retry-after', async () => {
    const a = await account(1_000_000, { rpmLimit: 2 });
    const first = await a.client.chat.completions
      .create({ model: 'priced', messages: [{ role: 'user', content: 'x' }] })
      .withResponse();
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
    const ok = await a.client.chat.completions
      .create({ model: 'priced', messages: [{ role: 'user', content: 'x' }], max_tokens: 100 })
      .withResponse();
    expect(ok.response.headers.get('x-ratelimit-limit-tokens')).toBe('300');
    const e = await a.client.chat.completions
      .create({ model: 'priced', messages: [{ role: 'user', content: 'x' }], max_tokens: 290 })
      .catch((err) => err);
    expect(e.status).toBe(429);
    expect(e.error.code).toBe('rate_limit_exceeded');
    expect(e.error.message).toContain('tokens per minute');
  });

  test('a refused request spends nothing of the tokens per minute: too large, over what is left, not allowed', async () => {
    const a = await account(1_000_000, { tpmLimit: 1_000 });
    const ask = (extra: object) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'x' }], ...extra }),
      });
    const tooLarge = await ask({ max_tokens: 1e15 });
    expect(tooLarge.status).toBe(429);
    expect(((await tooLarge.json()) as { error: { message: string } }).error.message).toContain(
      'Request too large for tokens per minute',
    );
    expect(
      (await ask({ messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-abc' } }] }] })).status,
    ).toBe(400);
    expect((await ask({ web_search_options: {} })).status).toBe(400);
    // about 600 of the 1,000 used; 500 more do not fit, and are refused...
    up.plan(answer('a', { prompt_tokens: 1, completion_tokens: 600, total_tokens: 601 }));
    expect((await ask({ max_tokens: 600 })).status).toBe(200);
    const over = await ask({ max_tokens: 500 });
    expect(over.status).toBe(429);
    expect(((await over.json()) as { error: { message: string } }).error.message).toContain(
      'Rate limit reached for tokens per minute',
    );
    // ...and none of the refusals counted: 350 still fit
    const ok = await ask({ max_tokens: 350 });
    expect(ok.status).toBe(200);
    expect(Number(ok.headers.get('x-ratelimit-remaining-tokens'))).toBeLessThan(60);
  });
});

describe('holds that outlive their process', () => {
  test('the sweeper settles an expired hold at its recorded progress, once, and ledger verify is clean', async () => {
    const a = await account(1_000_000);
    // a hold as a dead process leaves it: 500 µUSD held, 120 µUSD certainly spent when it last renewed its lease
    await db().transaction(async (trx) => {
      await trx('accounts').where('id', a.accountId).increment('held_micros', 500);
      await trx('api_keys').where('id', a.keyId).increment('held_micros', 500);
      await trx('holds').insert({
        request_id: `req_dead_${a.accountId}`,
        endpoint: 'chat',
        account_id: a.accountId,
        key_id: a.keyId,
        model: 'priced',
        amount_micros: 500,
        progress_micros: 120,
        prompt_tokens: 100,
        completion_tokens: 175,
        expires_at: Date.now() - 60_000,
        created_at: Date.now() - 120_000,
      });
    });
    expect((await verifyLedger(db())).stale_holds.map((h) => h.request_id)).toContain(`req_dead_${a.accountId}`);
    await Promise.all([gw.app.billing.sweep(), gw.app.billing.sweep()]); // two sweepers at once: one settles it
    // On a shared database another suite's gateway may be the one that settles it: wait for whoever does
    for (let i = 0; i < 50 && (await db()('holds').where('request_id', `req_dead_${a.accountId}`).first()); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(await balance(a.accountId)).toBe(1_000_000 - 120);
    expect((await ledger(a.accountId)).filter((r) => r.kind === 'usage')).toHaveLength(1);
    expect(await db()('usage_records').where('request_id', `req_dead_${a.accountId}`).first()).toMatchObject({
      counted: 'checkpoint',
      cost_micros: 120,
    });
    const v = await verifyLedger(db());
    expect(v.problems.filter((p) => p.account_id === a.accountId)).toEqual([]);
    expect(v.stale_holds.filter((h) => h.account_id === a.accountId)).toEqual([]);
  });

  test('a free model leaves no hold behind; a hold row of a request already settled is released, uncharged, and does not stop the sweep of the others', async () => {
    const a = await account(1_000_000);
    await a.client.chat.completions.create({ model: 'free', messages: [{ role: 'user', content: 'x' }] });
    await gw.settled();
    expect(await db()('holds').where('account_id', a.accountId)).toEqual([]);
    expect(await db()('usage_records').where('account_id', a.accountId)).toHaveLength(1);
    // A leftover: the hold row of a request whose usage record is written, expired before a real dead hold
    const settledId = (await db()('usage_records').where('account_id', a.accountId).first()).request_id;
    const dead = `req_dead2_${a.accountId}`;
    await db().transaction(async (trx) => {
      await trx('accounts').where('id', a.accountId).increment('held_micros', 300);
      await trx('api_keys').where('id', a.keyId).increment('held_micros', 300);
      const base = {
        endpoint: 'chat',
        account_id: a.accountId,
        key_id: a.keyId,
        model: 'priced',
        prompt_tokens: 10,
        completion_tokens: 10,
        created_at: Date.now() - 120_000,
      };
      await trx('holds').insert({
        ...base,
        request_id: settledId,
        amount_micros: 0,
        progress_micros: 0,
        expires_at: Date.now() - 90_000,
      });
      await trx('holds').insert({
        ...base,
        request_id: dead,
        amount_micros: 300,
        progress_micros: 40,
        expires_at: Date.now() - 60_000,
      });
    });
    await gw.app.billing.sweep();
    for (let i = 0; i < 50 && (await db()('holds').where('account_id', a.accountId).first()); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(await db()('holds').where('account_id', a.accountId)).toEqual([]);
    expect(await balance(a.accountId)).toBe(1_000_000 - 40);
    expect(await db()('usage_records').where('account_id', a.accountId)).toHaveLength(2);
    const v = await verifyLedger(db());
    expect(v.problems.filter((p) => p.account_id === a.accountId)).toEqual([]);
  });

  test('ledger verify reports an account whose balance does not match its ledger', async () => {
    const a = await account(1_000);
    await db()('accounts').where('id', a.accountId).increment('balance_micros', 5);
    const v = await verifyLedger(db());
    expect(v.ok).toBe(false);
    expect(v.problems).toContainEqual({
      account_id: a.accountId,
      problem: 'balance differs from the sum of its ledger rows',
      expected: 1000,
      actual: 1005,
    });
    await db()('accounts').where('id', a.accountId).decrement('balance_micros', 5);
  });
});

/** A chat request as raw JSON (fields the SDK would not send as written). */
function rawChat(secret: string, body: object): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Once settled: no per-request hold is left, and what the account holds is exactly its open leases. */
async function noHoldBeyondLeases(accountId: number): Promise<void> {
  await gw.settled();
  expect(await db()('holds').where('account_id', accountId)).toEqual([]);
  const leased = (await db()('leases').where('account_id', accountId)).reduce((n, l) => n + Number(l.amount_micros), 0);
  expect(Number((await db()('accounts').where('id', accountId).first()).held_micros)).toBe(leased);
}
