/**
 * Tiered prices: a price that depends on the prompt's size (Gemini 2.5 Pro above 200k prompt tokens: 2× input, 1.5×
 * output; Claude's 1M context likewise). Settlement charges the tier the reported prompt reached; a hold prices the
 * prompt bound at the highest tier it can reach. On the database in DATABASE_URL.
 */
import OpenAI from 'openai';
import { FakeAnthropic, API_KEY, message } from '../fakes/anthropicUpstream';
import { FakeGemini, geminiResponse, textStreamEvents, usageOf } from '../fakes/geminiUpstream';
import { FakeOpenAI } from '../fakes/openaiUpstream';
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
console: { registrations_per_address: 0, starter_credits_usd: 100 }
limits: { rpm: 0, tpm: 0 }
providers:
  up: { type: openai, base_url: "${openai.url}" }
  claude: { type: anthropic, base_url: "${claude.url}", api_key: "\${FAKE_ANTHROPIC_KEY}" }
  g: { type: gemini, base_url: "${gemini.url}" }
models:
  - id: gemini-pro
    kind: chat
    price: { input: 1.25, output: 10, cached_input: 0.31, tiers: [ { above_prompt_tokens: 200000, input: 2.5, output: 15, cached_input: 0.625 } ] }
    routes: [ { provider: g, model: gemini-2.5-pro } ]
  - id: claude-1m
    kind: chat
    price: { input: 3, output: 15, tiers: [ { above_prompt_tokens: 200000, input: 6, output: 22.5 } ] }
    allow: [long_context]
    routes: [ { provider: claude, model: claude-sonnet-4-5 } ]
  - id: tiered
    kind: chat
    price: { input: 1, output: 1, tiers: [ { above_prompt_tokens: 1000, input: 2, output: 3 } ] }
    routes: [ { provider: up, model: gpt-5 } ]
`,
    { ...process.env, FAKE_ANTHROPIC_KEY: API_KEY },
  );
  owner = await registered(gw.url);
  const { body } = await owner.post('/console/api/keys', { name: 'tiers' });
  secret = body.secret;
  client = new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await openai?.close();
  await claude?.close();
  await gemini?.close();
});

async function record(id: string) {
  await gw.settled();
  const rows = await owner.get('/console/api/usage?limit=100');
  return rows.body.data.find((r: { request_id: string }) => r.request_id === id);
}

/**
 * A prompt as long as the usage the fakes report for it (250,000 bytes: a prompt bound of as many tokens), so that
 * its hold covers what the upstream bills. A fake that reported 200,001 tokens for 'x' would bill beyond the hold,
 * and the charge would then be capped at what the key's lease had free (a shortfall), not the tier's price.
 */
const LONG = 'x'.repeat(250_000);

/** Asks `model` on /v1/chat/completions; the request id. */
async function ask(model: string, stream = false): Promise<string> {
  const { data, response } = await client.chat.completions
    .create({ model, messages: [{ role: 'user', content: LONG }], stream })
    .withResponse();
  if (stream) for await (const _c of data as AsyncIterable<unknown>) void _c;
  return response.headers.get('x-request-id')!;
}

describe('settlement charges the tier the prompt reached', () => {
  test('Gemini 2.5 Pro: 200,000 prompt tokens at the base price; 200,001 at the tier above', async () => {
    gemini.plan({ kind: 'json', body: geminiResponse([{ text: 'ok' }], 'STOP', usageOf(200_000, 1_000)) });
    // 200,000 × 1.25 + 1,000 × 10 = 250,000 + 10,000 µUSD
    expect(await record(await ask('gemini-pro'))).toMatchObject({ prompt_tokens: 200_000, cost_usd: '0.260000' });
    gemini.plan({ kind: 'json', body: geminiResponse([{ text: 'ok' }], 'STOP', usageOf(200_001, 1_000)) });
    // 200,001 × 2.5 + 1,000 × 15 = 500,002.5 + 15,000 → 515,003 µUSD
    expect(await record(await ask('gemini-pro'))).toMatchObject({ prompt_tokens: 200_001, cost_usd: '0.515003' });
  });

  test('streamed: the usage of the last event decides the tier', async () => {
    gemini.plan({ kind: 'sse', events: textStreamEvents(['o', 'k'], 'STOP', 200_001) });
    // 200,001 × 2.5 + 2 × 15 = 500,002.5 + 30 → 500,033 µUSD
    expect(await record(await ask('gemini-pro', true))).toMatchObject({
      prompt_tokens: 200_001,
      completion_tokens: 2,
      cost_usd: '0.500033',
    });
  });

  test('cached tokens count in the prompt that reaches the tier, and are billed at its cached price', async () => {
    gemini.plan({
      kind: 'json',
      body: geminiResponse([{ text: 'ok' }], 'STOP', usageOf(250_000, 100, { cachedContentTokenCount: 240_000 })),
    });
    // 10,000 × 2.5 + 240,000 × 0.625 + 100 × 15 = 25,000 + 150,000 + 1,500 µUSD
    expect(await record(await ask('gemini-pro'))).toMatchObject({
      prompt_tokens: 250_000,
      cached_tokens: 240_000,
      cost_usd: '0.176500',
    });
  });

  test("Claude's long context: above 200k the tier's prices, cache reads at Anthropic's 0.1× of the tier's input", async () => {
    claude.plan({
      kind: 'json',
      body: message([{ type: 'text', text: 'ok' }], {
        usage: { input_tokens: 10, cache_read_input_tokens: 250_000, output_tokens: 100 },
      }),
    });
    // 10 × 6 + 250,000 × 0.6 + 100 × 22.5 = 60 + 150,000 + 2,250 µUSD (at the base: 10 × 3 + 250,000 × 0.3 + 100 × 15 = 76,530)
    expect(await record(await ask('claude-1m'))).toMatchObject({ prompt_tokens: 250_010, cost_usd: '0.152310' });
    claude.plan({
      kind: 'json',
      body: message([{ type: 'text', text: 'ok' }], {
        usage: { input_tokens: 10, cache_read_input_tokens: 199_990, output_tokens: 100 },
      }),
    });
    // 10 × 3 + 199,990 × 0.3 + 100 × 15 = 30 + 59,997 + 1,500 µUSD
    expect(await record(await ask('claude-1m'))).toMatchObject({ prompt_tokens: 200_000, cost_usd: '0.061527' });
  });
});

describe('a hold prices the prompt bound at the highest tier it can reach', () => {
  /** What the upstream was asked to generate at most for this prompt, by a key holding 10,000 µUSD. */
  async function allowance(prompt: string) {
    const k = await gw.newKey({}, 10_000);
    const poor = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const body = { model: 'tiered', messages: [{ role: 'user' as const, content: prompt }], max_tokens: 100_000 };
    await poor.chat.completions.create(body);
    return {
      sent: openai.last().body.max_completion_tokens,
      bound: promptBound(inspect(body), { image_tokens: 4_800, file_tokens: 300_000 }),
    };
  }

  test('a bound within the base: what is left of the money after the prompt at 1, at 1 an output token', async () => {
    const { sent, bound } = await allowance('y'.repeat(100));
    expect(bound).toBeLessThanOrEqual(1000);
    expect(sent).toBe(10_000 - bound);
  });

  test('a bound above 1,000 tokens: the prompt at 2 and the output at 3, whatever the prompt turns out to be', async () => {
    const { sent, bound } = await allowance('y'.repeat(3_000));
    expect(bound).toBeGreaterThan(1000);
    expect(sent).toBe(Math.floor((10_000 - bound * 2) / 3));
  });
});
