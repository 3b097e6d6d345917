/**
 * Prices that know prompt caching and reasoning, on /v1/chat/completions, from every provider's own usage fields:
 * OpenAI's prompt_tokens_details.cached_tokens and completion_tokens_details.reasoning_tokens, Anthropic's
 * cache_read_input_tokens and cache_creation_input_tokens, Gemini's cachedContentTokenCount and thoughtsTokenCount.
 * Each class of token is charged at its price and the sum rounded up once; the hold prices the prompt at the highest
 * input price; the answer shows the cached and reasoning tokens; the usage records and the console's usage page
 * keep the classes apart. On the database in DATABASE_URL.
 */
import OpenAI from 'openai';
import { FakeAnthropic, API_KEY, message, streamEvents } from '../fakes/anthropicUpstream';
import { FakeGemini, geminiResponse, usageOf } from '../fakes/geminiUpstream';
import { FakeOpenAI, chatStreamEvents } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { registered, type ConsoleClient } from '../helpers/console';
import { inspect, promptBound } from '../../src/gateway/bound';

let openai: FakeOpenAI;
let claude: FakeAnthropic;
let gemini: FakeGemini;
let gw: TestGateway;
let owner: ConsoleClient;
let client: OpenAI;
let secret: string;

beforeAll(async () => {
  openai = await new FakeOpenAI().start();
  claude = await new FakeAnthropic().start();
  gemini = await new FakeGemini().start();
  gw = await startGateway(
    `
console: { registrations_per_address: 0 }
limits: { rpm: 0, tpm: 0 }
providers:
  up: { type: openai, base_url: "${openai.url}" }
  claude: { type: anthropic, base_url: "${claude.url}", api_key: "\${FAKE_ANTHROPIC_KEY}" }
  g: { type: gemini, base_url: "${gemini.url}" }
models:
  - { id: gpt, kind: chat, price: { input: 2, cached_input: 0.5, output: 8 }, routes: [ { provider: up, model: gpt-5 } ] }
  - { id: claude, kind: chat, price: { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15 }, routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
  - { id: gemini, kind: chat, price: { input: 0.3, cached_input: 0.075, output: 2.5 }, routes: [ { provider: g, model: gemini-2.5-flash } ] }
  - { id: writes-dear, kind: chat, price: { input: 1, cache_write: 10, output: 1 }, routes: [ { provider: up, model: gpt-5 } ] }
  - { id: claude-plain, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
  - { id: claude-1h, kind: chat, price: { input: 3, output: 15 }, allow: [cache_1h], routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
`,
    { ...process.env, FAKE_ANTHROPIC_KEY: API_KEY },
  );
  owner = await registered(gw.url);
  const { body } = await owner.post('/console/api/keys', { name: 'agents' });
  client = new OpenAI({ apiKey: body.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  secret = body.secret;
});

afterAll(async () => {
  await gw?.close();
  await openai?.close();
  await claude?.close();
  await gemini?.close();
});

const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] });

async function record(id: string) {
  await gw.settled();
  const rows = await owner.get('/console/api/usage?limit=100');
  return rows.body.data.find((r: { request_id: string }) => r.request_id === id);
}

/** The request id of an answer (the x-request-id header). */
async function withId<T>(p: { withResponse(): Promise<{ data: T; response: Response }> }) {
  const { data, response } = await p.withResponse();
  return { data, id: response.headers.get('x-request-id')! };
}

describe('each class at its price, rounded up once', () => {
  test('OpenAI: cached_tokens at cached_input, reasoning tokens as output; the answer shows both details', async () => {
    const usage = {
      prompt_tokens: 1000,
      completion_tokens: 100,
      total_tokens: 1100,
      prompt_tokens_details: { cached_tokens: 800 },
      completion_tokens_details: { reasoning_tokens: 40 },
    };
    openai.plan({
      kind: 'json',
      body: {
        id: 'chatcmpl-c',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-5',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage,
      },
    });
    const { data, id } = await withId(ask('gpt'));
    expect(data.usage).toMatchObject({
      prompt_tokens: 1000,
      prompt_tokens_details: { cached_tokens: 800 },
      completion_tokens_details: { reasoning_tokens: 40 },
    });
    // 200 fresh × 2 + 800 cached × 0.5 + 100 × 8 = 400 + 400 + 800 = 1,600 µUSD (at the input price: 2,800)
    expect(await record(id)).toMatchObject({
      prompt_tokens: 1000,
      cached_tokens: 800,
      cache_write_tokens: 0,
      completion_tokens: 100,
      reasoning_tokens: 40,
      cost_usd: '0.001600',
    });
  });

  test('OpenAI, streamed: the usage chunk shows the details, and they are billed the same', async () => {
    const usage = {
      prompt_tokens: 1001,
      completion_tokens: 3,
      total_tokens: 1004,
      prompt_tokens_details: { cached_tokens: 999 },
      completion_tokens_details: { reasoning_tokens: 1 },
    };
    openai.plan({ kind: 'sse', events: chatStreamEvents('gpt-5', ['o', 'k'], true, usage) });
    const { data: stream, id } = await withId(
      client.chat.completions.create({
        model: 'gpt',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[chunks.length - 1].usage).toMatchObject({
      prompt_tokens_details: { cached_tokens: 999 },
      completion_tokens_details: { reasoning_tokens: 1 },
    });
    // 2 × 2 + 999 × 0.5 + 3 × 8 = 4 + 499.5 + 24 = 527.5 → 528 µUSD: rounded up once, not per class (529)
    expect(await record(id)).toMatchObject({ cached_tokens: 999, reasoning_tokens: 1, cost_usd: '0.000528' });
  });

  test('Anthropic: cache reads at cached_input, cache writes at cache_write; the answer shows the reads as cached_tokens', async () => {
    const msg = message([{ type: 'text', text: 'cached' }], {
      usage: { input_tokens: 5, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 12 },
    });
    claude.plan({ kind: 'json', body: msg }, { kind: 'sse', events: streamEvents(msg) });
    const { data, id } = await withId(ask('claude'));
    expect(data.usage).toEqual({
      prompt_tokens: 2105,
      completion_tokens: 12,
      total_tokens: 2117,
      prompt_tokens_details: { cached_tokens: 2000 },
    });
    // 5 × 3 + 2000 × 0.3 + 100 × 3.75 + 12 × 15 = 15 + 600 + 375 + 180 = 1,170 µUSD
    expect(await record(id)).toMatchObject({
      prompt_tokens: 2105,
      cached_tokens: 2000,
      cache_write_tokens: 100,
      completion_tokens: 12,
      cost_usd: '0.001170',
    });
    const { data: stream, id: streamed } = await withId(
      client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }], stream: true }),
    );
    for await (const _c of stream) void _c;
    expect(await record(streamed)).toMatchObject({
      cached_tokens: 2000,
      cache_write_tokens: 100,
      cost_usd: '0.001170',
    });
  });

  test('Gemini: cachedContentTokenCount at cached_input, thinking tokens as output; the answer shows both', async () => {
    gemini.plan({
      kind: 'json',
      body: geminiResponse(
        [{ text: 'ok' }],
        'STOP',
        usageOf(1000, 50, { cachedContentTokenCount: 600, thoughtsTokenCount: 30 }),
      ),
    });
    const { data, id } = await withId(ask('gemini'));
    expect(data.usage).toMatchObject({
      prompt_tokens: 1000,
      completion_tokens: 80,
      prompt_tokens_details: { cached_tokens: 600 },
      completion_tokens_details: { reasoning_tokens: 30 },
    });
    // 400 × 0.3 + 600 × 0.075 + 80 × 2.5 = 120 + 45 + 200 = 365 µUSD
    expect(await record(id)).toMatchObject({
      prompt_tokens: 1000,
      cached_tokens: 600,
      completion_tokens: 80,
      reasoning_tokens: 30,
      cost_usd: '0.000365',
    });
  });
});

describe('cache writes by their life, and cache prices left out of the configuration', () => {
  /** A /v1/messages request (Anthropic's API, served natively); its request id. */
  async function messages(model: string, stream = false) {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'content-type': 'application/json' },
      body: JSON.stringify({ model, max_tokens: 64, stream, messages: [{ role: 'user', content: 'x' }] }),
    });
    await res.text();
    expect(res.status).toBe(200);
    return res.headers.get('x-request-id')!;
  }

  test("a model priced { input: 3, output: 15 } pays Anthropic's multipliers: writes 1.25×, reads 0.1×", async () => {
    claude.plan({
      kind: 'json',
      body: message([{ type: 'text', text: 'ok' }], {
        usage: {
          input_tokens: 10,
          cache_creation_input_tokens: 10_053,
          cache_read_input_tokens: 1_000,
          output_tokens: 10,
        },
      }),
    });
    // 10 × 3 + 10,053 × 3.75 + 1,000 × 0.3 + 10 × 15 = 30 + 37,698.75 + 300 + 150 → 38,179 µUSD (at the input price: 33,339)
    expect(await record(await messages('claude-plain'))).toMatchObject({
      cache_write_tokens: 10_053,
      cache_write_1h_tokens: 0,
      cost_usd: '0.038179',
    });
  });

  test('1-hour writes are their own class, read from cache_creation, at 2× input; whole or streamed', async () => {
    const usage = {
      input_tokens: 100,
      cache_creation_input_tokens: 3_000,
      cache_creation: { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 2_000 },
      output_tokens: 10,
    };
    const msg = message([{ type: 'text', text: 'ok' }], { usage: usage as never });
    claude.plan({ kind: 'json', body: msg }, { kind: 'sse', events: streamEvents(msg) });
    // 100 × 3 + 1,000 × 3.75 + 2,000 × 6 + 10 × 15 = 300 + 3,750 + 12,000 + 150 = 16,200 µUSD
    const expected = {
      prompt_tokens: 3_100,
      cache_write_tokens: 3_000,
      cache_write_1h_tokens: 2_000,
      cost_usd: '0.016200',
    };
    expect(await record(await messages('claude-1h'))).toMatchObject(expected);
    expect(await record(await messages('claude-1h', true))).toMatchObject(expected);
  });
});

test('the hold prices the prompt at the highest input price (here cache writes, 10× the input)', async () => {
  const k = await gw.newKey({}, 10_000);
  const poor = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const body = {
    model: 'writes-dear',
    messages: [{ role: 'user' as const, content: 'y'.repeat(100) }],
    max_tokens: 100_000,
  };
  await poor.chat.completions.create(body);
  const bound = promptBound(inspect(body), { image_tokens: 4_800, file_tokens: 300_000 });
  // output 1 µUSD a token: what is left of 10,000 µUSD after the prompt bound at 10 µUSD a token (at the input price, 1, it would be more)
  expect(openai.last().body.max_completion_tokens).toBe(10_000 - bound * 10);
});

test("the console's usage page keeps the classes apart, per request and per model", async () => {
  await gw.settled();
  const { body } = await owner.get('/console/api/usage?limit=100');
  const claudeTotals = body.totals.find((t: { model: string }) => t.model === 'claude');
  expect(claudeTotals).toMatchObject({
    requests: 2,
    prompt_tokens: 4210,
    cached_tokens: 4000,
    cache_write_tokens: 200,
    completion_tokens: 24,
    reasoning_tokens: 0,
    cost_usd: '0.002340',
  });
  const gptTotals = body.totals.find((t: { model: string }) => t.model === 'gpt');
  expect(gptTotals).toMatchObject({ requests: 2, cached_tokens: 1799, reasoning_tokens: 41 });
});
