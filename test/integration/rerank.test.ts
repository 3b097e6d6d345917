/**
 * POST /v1/rerank through the gateway, with fetch (the OpenAI SDK has no rerank): an `openai` provider with a
 * base_url serves it as vLLM, Jina and Cohere do (POST {base_url}/rerank), and so does the mock. Priced per input
 * token — every (query, document) pair, as a cross-encoder reads them: the upstream's count, or the tokenizer's when
 * it reports none — and per search unit where the model sets `price.search_unit`; held for before anything is sent,
 * and refused, before anything reaches the upstream, to an account that cannot pay for what the request may cost.
 * On the database in DATABASE_URL.
 */
import { FakeOpenAI } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { registered } from '../helpers/console';
import { schemaProblems } from '../helpers/contract';
import type { NewKey } from '../../src/accounts/keys';
import { inspect, promptBound } from '../../src/gateway/bound';
import { PAIR_TOKENS, rerank } from '../../src/gateway/operations/rerank';
import { countText } from '../../src/gateway/tokenizer/count';

let up: FakeOpenAI;
let gw: TestGateway;

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  gw = await startGateway(`
limits: { rpm: 0, tpm: 0 }
console: { registrations_per_address: 0, starter_credits_usd: 1 }
providers:
  vllm: { type: openai, base_url: "${up.url}" }
  mock: { type: mock }
  down: { type: openai, base_url: "http://127.0.0.1:9/v1", timeouts: { connect_ms: 1000 } }
models:
  # 2 USD per million tokens: 2 µUSD a token
  - { id: rerank-tokens, kind: rerank, price: { input: 2 }, routes: [ { provider: vllm, model: bge-reranker-v2-m3 } ] }
  # Cohere's 2 USD per 1,000 searches: 2,000 USD per million search units
  - { id: rerank-searches, kind: rerank, price: { search_unit: 2000 }, routes: [ { provider: vllm, model: rerank-v3.5 } ] }
  - { id: rerank-fallback, kind: rerank, price: { input: 2 }, routes: [ { provider: down }, { provider: vllm } ] }
  - { id: mock-rerank, kind: rerank, routes: [ { provider: mock } ] }
  - { id: gpt, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: vllm } ] }
`);
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

const db = () => gw.app.db;
const balance = async (id: number) => {
  await gw.settled(); // charges under a lease are written in batches
  return Number((await db()('accounts').where('id', id).first()).balance_micros);
};

async function account(credits = 1_000_000, key: Partial<NewKey> = {}) {
  const k = await gw.newKey(key, credits);
  const post = async (body: unknown) => {
    const res = await fetch(`${gw.url}/v1/rerank`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any, headers: res.headers };
  };
  return { ...k, post };
}

async function recordOf(accountId: number) {
  await gw.settled();
  return db()('usage_records').where('account_id', accountId).orderBy('id', 'desc').first();
}

const DOCS = ['Berlin is the capital of Germany.', 'Paris is the capital of France.', { text: 'Tea is a drink.' }];

test('served by POST {base_url}/rerank; charged exactly the tokens the upstream reports, at input', async () => {
  const a = await account();
  const res = await a.post({
    model: 'rerank-tokens',
    query: 'capital of France',
    documents: DOCS,
    top_n: 2,
    return_documents: true,
  });
  expect(res.status).toBe(200);
  // the fake ranks the last document first; usage: 10 tokens a (query, document) pair
  expect(res.body).toEqual({
    id: 'rerank-fake1',
    model: 'rerank-tokens',
    results: [
      { index: 2, relevance_score: 1, document: { text: 'Tea is a drink.' } },
      { index: 1, relevance_score: 2 / 3, document: { text: 'Paris is the capital of France.' } },
    ],
    usage: { prompt_tokens: 30, total_tokens: 30, search_units: 1 },
  });
  expect(up.last()).toMatchObject({
    path: '/v1/rerank',
    body: { model: 'bge-reranker-v2-m3', query: 'capital of France', documents: DOCS, top_n: 2 },
  });
  expect(await recordOf(a.accountId)).toMatchObject({
    endpoint: 'rerank',
    prompt_tokens: 30,
    search_units: 1,
    counted: 'upstream',
    cost_micros: 60,
  });
  expect(await balance(a.accountId)).toBe(1_000_000 - 60);
});

test('return_documents: false takes out what the upstream sends anyway; true adds what it leaves out (Cohere v2)', async () => {
  const a = await account();
  const off = await a.post({ model: 'rerank-tokens', query: 'q', documents: DOCS, return_documents: false });
  expect(off.body.results.map((r: object) => Object.keys(r).sort())).toEqual(
    Array(3).fill(['index', 'relevance_score']),
  );
  // Cohere's v2 answer: no documents, its own billed units (not shown: the gateway's usage is)
  up.plan({
    kind: 'json',
    body: {
      id: 'c0',
      results: [{ index: 1, relevance_score: 0.9 }],
      meta: { api_version: { version: '2' }, billed_units: { search_units: 1 } },
    },
  });
  const on = await a.post({ model: 'rerank-tokens', query: 'q', documents: DOCS, return_documents: true });
  expect(on.body).toMatchObject({
    results: [{ index: 1, relevance_score: 0.9, document: { text: 'Paris is the capital of France.' } }],
  });
  expect(on.body).not.toHaveProperty('meta');
});

test('an upstream that reports no tokens: the tokenizer counts the query once with every document', async () => {
  const a = await account();
  up.plan({ kind: 'json', body: { results: [{ index: 0, relevance_score: 0.5 }] } });
  const query = 'what is the capital of France?';
  const res = await a.post({ model: 'rerank-tokens', query, documents: DOCS });
  const tokens = DOCS.reduce((n, d) => n + countText(query) + countText(typeof d === 'string' ? d : d.text), 0);
  expect(res.body.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens, search_units: 1 });
  expect(await recordOf(a.accountId)).toMatchObject({ counted: 'tokenizer', cost_micros: 2 * tokens });
});

test('priced per search unit: a query over up to 100 documents is one; 150 documents cost two', async () => {
  const a = await account();
  const documents = Array.from({ length: 150 }, (_, i) => `document ${i}`);
  const res = await a.post({ model: 'rerank-searches', query: 'q', documents, top_n: 3 });
  expect(res.status).toBe(200);
  expect(res.body.results).toHaveLength(3);
  expect(res.body.usage.search_units).toBe(2);
  expect(await recordOf(a.accountId)).toMatchObject({ search_units: 2, cost_micros: 4000 });
  expect(await balance(a.accountId)).toBe(1_000_000 - 4000);
});

describe('an account that cannot pay for what the request may cost is refused before anything reaches the upstream', () => {
  test('per token: the hold is the prompt bound (the query once per document), whatever the upstream would report', async () => {
    const body = { model: 'rerank-tokens', query: 'capital of France', documents: DOCS };
    const model = gw.app.config.models.find((m) => m.id === 'rerank-tokens')!;
    const bound = rerank.promptBound!(body, inspect(body), model);
    const hold = 2 * bound; // 2 µUSD a token
    const before = up.requests.length;
    const poor = await account(hold - 1);
    const res = await poor.post(body);
    expect(res).toMatchObject({ status: 429, body: { error: { code: 'insufficient_quota' } } });
    expect(up.requests.length).toBe(before);
    expect(await balance(poor.accountId)).toBe(hold - 1);
    // what is held is enough, and the charge is what the upstream reported (30 tokens)
    const enough = await account(hold);
    expect((await enough.post(body)).status).toBe(200);
    expect(await balance(enough.accountId)).toBe(hold - 60);
  });

  test('per search unit: two units cost 4,000 µUSD; 3,999 is refused', async () => {
    const before = up.requests.length;
    const poor = await account(3_999);
    const documents = Array.from({ length: 101 }, (_, i) => `document ${i}`);
    const res = await poor.post({ model: 'rerank-searches', query: 'q', documents });
    expect(res.status).toBe(429);
    expect(up.requests.length).toBe(before);
  });
});

test('the prompt bound covers every (query, document) pair with its template, and each document once', () => {
  const body = { model: 'm', query: 'q'.repeat(1000), documents: ['a', 'b', 'c'] };
  const model = gw.app.config.models.find((m) => m.id === 'rerank-tokens')!;
  const bound = rerank.promptBound!(body, inspect(body), model);
  // a tokenizer never makes more tokens than bytes: 3 × (1,000 query bytes + a template) + the documents
  expect(bound).toBeGreaterThanOrEqual(3 * (1000 + PAIR_TOKENS) + 3);
  // and the plain body bound would not have held it
  expect(promptBound(inspect(body), model)).toBeLessThan(3 * 1000);
});

test('the mock ranks by the words a document shares with the query', async () => {
  const a = await account();
  const res = await a.post({
    model: 'mock-rerank',
    query: 'capital of France',
    documents: DOCS,
    return_documents: true,
  });
  expect(res.status).toBe(200);
  expect(res.body.results[0]).toMatchObject({ index: 1, document: { text: 'Paris is the capital of France.' } });
  expect(res.body.results.map((r: { index: number }) => r.index)).toEqual([1, 0, 2]);
  expect(schemaProblems('CreateRerankResponse', res.body)).toBeNull();
});

test('a route that fails before answering hands the request to the next one; charged once', async () => {
  const a = await account();
  const res = await a.post({ model: 'rerank-fallback', query: 'q', documents: ['x', 'y'] });
  expect(res.status).toBe(200);
  expect(await recordOf(a.accountId)).toMatchObject({ provider: 'vllm', cost_micros: 40 });
});

test("an answer that is not a list of rerank results (TEI's own bare list) fails, and costs nothing", async () => {
  const a = await account();
  up.plan({ kind: 'json', body: [{ index: 0, score: 0.9 }] });
  const res = await a.post({ model: 'rerank-tokens', query: 'q', documents: ['x'] });
  expect(res.status).toBe(502);
  expect(await balance(a.accountId)).toBe(1_000_000);
});

test("the console's usage shows the search units, as a class of their own", async () => {
  const owner = await registered(gw.url);
  const { body: key } = await owner.post('/console/api/keys', { name: 'rerank' });
  const res = await fetch(`${gw.url}/v1/rerank`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'rerank-searches', query: 'q', documents: ['x'] }),
  });
  expect(res.status).toBe(200);
  await gw.settled();
  const usage = (await owner.get('/console/api/usage')).body;
  expect(usage.data[0]).toMatchObject({ model: 'rerank-searches', usage: { search_unit: 1, moderation: 0 } });
  expect(usage.classes).toEqual(
    expect.arrayContaining([
      { name: 'search_unit', label: 'rerank', unit: 'search_unit', part_of: null },
      { name: 'moderation', label: 'moderation', unit: 'request', part_of: null },
    ]),
  );
  // the dashboard's day counts them too, and the model list says what one costs: by search unit, not by token
  const [today] = (await owner.get('/console/api/usage/daily?days=1')).body.data;
  expect(today).toMatchObject({ requests: 1, usage: { ...usage.data[0].usage, search_unit: 1, moderation: 0 } });
  const models = (await owner.get('/console/api/models')).body.data;
  expect(models.find((m: { id: string }) => m.id === 'rerank-searches').prices).toEqual({ search_unit: '2000.000000' });
  expect(models.find((m: { id: string }) => m.id === 'mock-rerank').prices).toEqual({});
});

describe('refused with a clear 4xx', () => {
  test.each([
    ['no documents', { query: 'q', documents: [] }, 'documents'],
    [
      'a document that carries more than text',
      { query: 'q', documents: [{ text: 'a', image: 'https://x' }] },
      'documents[0].image',
    ],
    ['top_n of 0', { query: 'q', documents: ['a'], top_n: 0 }, 'top_n'],
    ['no query', { documents: ['a'] }, 'query'],
  ])('%s: 400 naming the field', async (_name, body, param) => {
    const a = await account();
    const res = await a.post({ model: 'rerank-tokens', ...body });
    expect(res).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error', param } } });
  });

  test('a chat model: 400 model_not_supported', async () => {
    const a = await account();
    const res = await a.post({ model: 'gpt', query: 'q', documents: ['a'] });
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'model_not_supported' } } });
  });

  test('a key without the rerank scope: 403', async () => {
    const a = await account(1_000_000, { scopes: ['chat'] });
    const res = await a.post({ model: 'rerank-tokens', query: 'q', documents: ['a'] });
    expect(res).toMatchObject({ status: 403, body: { error: { code: 'insufficient_scope' } } });
  });
});
