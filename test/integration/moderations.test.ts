/**
 * POST /v1/moderations through the gateway, with the official `openai` SDK: served by an OpenAI-compatible upstream,
 * by Azure (per deployment) and by the mock, priced per request — free unless the model sets `price.moderation`,
 * and counted in the usage records either way —, held for before anything is sent, and refused, before anything
 * reaches the upstream, to an account that cannot pay for it. On the database in DATABASE_URL.
 */
import OpenAI from 'openai';
import { AZURE_KEY, FakeAzure } from '../fakes/azureUpstream';
import { FakeOpenAI } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { schemaProblems } from '../helpers/contract';
import type { NewKey } from '../../src/accounts/keys';

let openai: FakeOpenAI;
let azure: FakeAzure;
let gw: TestGateway;

beforeAll(async () => {
  openai = await new FakeOpenAI().start();
  azure = await new FakeAzure().start();
  gw = await startGateway(`
limits: { rpm: 0, tpm: 0 }
providers:
  oa: { type: openai, base_url: "${openai.url}" }
  az: { type: azure, base_url: "${azure.url}", api_key: "${AZURE_KEY}" }
  mock: { type: mock }
  down: { type: openai, base_url: "http://127.0.0.1:9/v1", timeouts: { connect_ms: 1000 } }
models:
  - { id: omni-moderation-latest, kind: moderation, routes: [ { provider: oa } ] }
  # 2000 USD per million requests: 0.002 USD, 2000 µUSD, a request
  - { id: moderation-priced, kind: moderation, price: { moderation: 2000 }, routes: [ { provider: oa, model: omni-moderation-2024-09-26 } ] }
  - { id: moderation-azure, kind: moderation, price: { moderation: 1000 }, routes: [ { provider: az, model: moderation-prod } ] }
  - { id: moderation-fallback, kind: moderation, price: { moderation: 1000 }, routes: [ { provider: down }, { provider: oa } ] }
  - { id: mock-moderation, kind: moderation, routes: [ { provider: mock } ] }
  - { id: gpt, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: oa } ] }
`);
});

afterAll(async () => {
  await gw?.close();
  await openai?.close();
  await azure?.close();
});

const db = () => gw.app.db;
const balance = async (id: number) => {
  await gw.settled(); // charges under a lease are written in batches
  return Number((await db()('accounts').where('id', id).first()).balance_micros);
};

/** A client of a new account with `credits` µUSD (and its ids). */
async function client(credits = 1_000_000, key: Partial<NewKey> = {}) {
  const k = await gw.newKey(key, credits);
  return { ...k, sdk: new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 }) };
}

async function recordOf(accountId: number) {
  await gw.settled();
  return db()('usage_records').where('account_id', accountId).orderBy('id', 'desc').first();
}

test('free by default: a moderation that names no model asks for omni-moderation-latest, costs nothing, and is counted', async () => {
  const c = await client();
  const res = await c.sdk.moderations.create({ input: 'I want to kill them.' });
  expect(res.results[0]).toMatchObject({ flagged: true, categories: { violence: true } });
  expect(res.model).toBe('omni-moderation-latest');
  expect(openai.last()).toMatchObject({
    path: '/v1/moderations',
    body: { model: 'omni-moderation-latest', input: 'I want to kill them.' },
  });
  expect(await balance(c.accountId)).toBe(1_000_000);
  // OpenAI reports no usage: the text is counted with the tokenizer (6 tokens), priced at input (0 here)
  expect(await recordOf(c.accountId)).toMatchObject({
    model: 'omni-moderation-latest',
    endpoint: 'moderations',
    status: 200,
    moderation_requests: 1,
    prompt_tokens: 6,
    counted: 'tokenizer',
    cost_micros: 0,
  });
});

test('priced per request: the balance goes down by exactly price.moderation, once, in the ledger', async () => {
  const c = await client();
  const res = await c.sdk.moderations.create({ model: 'moderation-priced', input: ['hello', 'kill'] });
  expect(res.results.map((r) => r.flagged)).toEqual([false, true]);
  expect(res.model).toBe('moderation-priced');
  expect(openai.last().body.model).toBe('omni-moderation-2024-09-26'); // the route's model
  expect(await recordOf(c.accountId)).toMatchObject({ moderation_requests: 1, cost_micros: 2000 });
  expect(await balance(c.accountId)).toBe(1_000_000 - 2000);
  const ledger = await db()('ledger').where({ account_id: c.accountId, kind: 'usage' });
  expect(ledger.map((r) => Number(r.amount_micros))).toEqual([-2000]);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  expect(metrics).toMatch(
    /switchyard_usage_units_total\{model="moderation-priced",class="moderation",unit="request"\} [1-9]/,
  );
});

test('text and image inputs go upstream as written', async () => {
  const c = await client();
  const input = [
    { type: 'text' as const, text: 'a caption' },
    { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
  ];
  const res = await c.sdk.moderations.create({ model: 'moderation-priced', input });
  expect(res.results).toHaveLength(1);
  expect(openai.last().body.input).toEqual(input);
  expect(await balance(c.accountId)).toBe(1_000_000 - 2000);
});

test('an account that cannot pay for the request is refused before anything reaches the upstream', async () => {
  const before = openai.requests.length;
  for (const credits of [1_999, 0]) {
    const c = await client(credits);
    const e = await c.sdk.moderations.create({ model: 'moderation-priced', input: 'hello' }).catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.APIError);
    expect(e).toMatchObject({ status: 429, code: 'insufficient_quota' });
    expect(await balance(c.accountId)).toBe(credits);
  }
  expect(openai.requests.length).toBe(before);
  // exactly the price is enough
  const c = await client(2000);
  await c.sdk.moderations.create({ model: 'moderation-priced', input: 'hello' });
  expect(await balance(c.accountId)).toBe(0);
});

test('Azure: the deployment in the path, api-version in the query, the key in api-key', async () => {
  const c = await client();
  const res = await c.sdk.moderations.create({ model: 'moderation-azure', input: 'hello' });
  expect(res).toMatchObject({ model: 'moderation-azure', results: [{ flagged: false }] });
  const r = azure.last();
  expect(r.path).toBe('/openai/deployments/moderation-prod/moderations?api-version=2024-10-21');
  expect(r.headers['api-key']).toBe(AZURE_KEY);
  expect(await recordOf(c.accountId)).toMatchObject({ provider: 'az', cost_micros: 1000 });
});

test('the mock answers every category, and flags violent words', async () => {
  const c = await client();
  const res = await c.sdk.moderations.create({ model: 'mock-moderation', input: ['we attack at dawn', 'tea?'] });
  expect(res.results.map((r) => r.flagged)).toEqual([true, false]);
  expect(Object.keys(res.results[0].categories)).toHaveLength(13);
  expect(res.results[0].categories.violence).toBe(true);
  expect(res.results[0].category_applied_input_types.violence).toEqual(['text']);
  expect(schemaProblems('CreateModerationResponse', res)).toBeNull();
});

test('a route that fails before answering hands the request to the next one; it is charged once', async () => {
  const c = await client();
  const before = openai.requests.length;
  await c.sdk.moderations.create({ model: 'moderation-fallback', input: 'hello' });
  expect(openai.requests.length).toBe(before + 1);
  expect(await recordOf(c.accountId)).toMatchObject({ provider: 'oa', cost_micros: 1000 });
  expect(await balance(c.accountId)).toBe(1_000_000 - 1000);
});

test('an upstream that does not answer with moderation results fails the call, and costs nothing', async () => {
  const c = await client();
  openai.plan({ kind: 'json', body: { object: 'list', data: [] } });
  const e = await c.sdk.moderations.create({ model: 'moderation-priced', input: 'hello' }).catch((x) => x);
  expect(e).toMatchObject({ status: 502 });
  expect(await balance(c.accountId)).toBe(1_000_000);
});

describe('refused with a clear 4xx', () => {
  test('a chat model, and chat on a moderation model: 400 model_not_supported', async () => {
    const c = await client();
    const e = await c.sdk.moderations.create({ model: 'gpt', input: 'hello' }).catch((x) => x);
    expect(e).toMatchObject({ status: 400, code: 'model_not_supported' });
    const f = await c.sdk.chat.completions
      .create({ model: 'moderation-priced', messages: [{ role: 'user', content: 'hi' }] })
      .catch((x) => x);
    expect(f).toMatchObject({ status: 400, code: 'model_not_supported' });
  });

  test('an input that is neither text nor text and image parts: 400 naming input', async () => {
    const c = await client();
    for (const input of [42, [{ type: 'video_url', video_url: { url: 'https://x.example/v.mp4' } }]]) {
      const e = await c.sdk.moderations.create({ model: 'moderation-priced', input: input as never }).catch((x) => x);
      expect(e).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'input' });
    }
  });

  test('a key without the moderations scope: 403', async () => {
    const c = await client(1_000_000, { scopes: ['chat'] });
    const e = await c.sdk.moderations.create({ model: 'moderation-priced', input: 'hello' }).catch((x) => x);
    expect(e).toMatchObject({ status: 403, code: 'insufficient_scope' });
  });

  test("a key's requests per minute: the answer carries the rate-limit headers; one more is a 429 that goes nowhere", async () => {
    const c = await client(1_000_000, { rpmLimit: 1 });
    const { response } = await c.sdk.moderations.create({ model: 'moderation-priced', input: 'x' }).withResponse();
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const before = openai.requests.length;
    const e = await c.sdk.moderations.create({ model: 'moderation-priced', input: 'x' }).catch((x) => x);
    expect(e).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
    expect(openai.requests.length).toBe(before);
  });
});
