/**
 * Provider `azure` (Azure OpenAI) through the gateway, against a fake Azure resource on loopback that answers as
 * Azure does: deployment in the path, api-version in the query, the key in an `api-key` header, content-filter
 * results in answers and streams, Azure's error shape. The official `openai` SDK is the client.
 */
import OpenAI from 'openai';
import { AZURE_KEY, FakeAzure } from '../fakes/azureUpstream';
import { startGateway, type TestGateway } from '../helpers/app';

let up: FakeAzure;
let gw: TestGateway;
let client: OpenAI;
let accountId: number;

beforeAll(async () => {
  up = await new FakeAzure().start();
  gw = await startGateway(`
limits: { rpm: 0, tpm: 0 }
providers:
  azure: { type: azure, base_url: "${up.url}", api_key: "${AZURE_KEY}" }
  azure-preview: { type: azure, base_url: "${up.url}", api_key: "${AZURE_KEY}", api_version: 2025-01-01-preview }
  azure-badkey: { type: azure, base_url: "${up.url}", api_key: wrong }
models:
  - { id: gpt-4o, kind: chat, price: { input: 2.5, output: 10 }, routes: [ { provider: azure, model: gpt4o-prod } ] }
  - { id: gpt-4o-preview, kind: chat, price: { input: 2.5, output: 10 }, routes: [ { provider: azure-preview, model: gpt4o-prod } ] }
  - { id: gpt-4o-misconfigured, kind: chat, routes: [ { provider: azure-badkey, model: gpt4o-prod } ] }
  - { id: gpt-4o-missing, kind: chat, routes: [ { provider: azure, model: no-such-deployment } ] }
  - { id: embed, kind: embedding, price: { input: 0.02 }, routes: [ { provider: azure, model: embed-prod } ] }
`);
  const k = await gw.newKey();
  accountId = k.accountId;
  client = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

test('chat goes to the deployment with the api-version and the api-key header; the allowance is max_completion_tokens only', async () => {
  const res = await client.chat.completions.create({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 40,
  });
  expect(res.choices[0].message.content).toBe('Hello from Azure.');
  expect(res.model).toBe('gpt-4o');
  const r = up.last();
  expect(r.path).toBe('/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21');
  expect(r.headers['api-key']).toBe(AZURE_KEY);
  expect(r.headers.authorization).toBeUndefined();
  expect(r.body).toMatchObject({ max_completion_tokens: 40, stream: false });
  expect(r.body.max_tokens).toBeUndefined();
  await gw.settled();
  const record = await gw.app.db('usage_records').where('account_id', accountId).orderBy('id', 'desc').first();
  expect(record).toMatchObject({
    provider: 'azure',
    counted: 'upstream',
    prompt_tokens: 12,
    completion_tokens: 4,
    cost_micros: 70,
  }); // 12 × 2.5 + 4 × 10 = 70
});

test('a stream: Azure’s prompt-filter chunk (no choices) is not passed on; the usage chunk comes when asked', async () => {
  const stream = await client.chat.completions.create({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  expect(chunks.slice(0, -1).every((c) => c.choices.length === 1)).toBe(true);
  expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello from Azure.');
  expect(chunks[chunks.length - 1]).toMatchObject({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 4 } });
  expect(up.last().body.stream_options).toEqual({ include_usage: true });
});

test('api_version is a setting of the provider', async () => {
  await client.chat.completions.create({ model: 'gpt-4o-preview', messages: [{ role: 'user', content: 'hi' }] });
  expect(up.last().path).toBe('/openai/deployments/gpt4o-prod/chat/completions?api-version=2025-01-01-preview');
});

test('embeddings go to their deployment', async () => {
  const res = await client.embeddings.create({ model: 'embed', input: ['a', 'b'], encoding_format: 'float' });
  expect(res.data.map((d) => d.embedding)).toEqual([
    [0.1, 0.2, 0.3],
    [0.1, 0.2, 0.3],
  ]);
  expect(up.last().path).toBe('/openai/deployments/embed-prod/embeddings?api-version=2024-10-21');
});

test('a wrong key or an unknown deployment is our configuration’s fault: 502, naming neither URL nor key', async () => {
  for (const model of ['gpt-4o-misconfigured', 'gpt-4o-missing']) {
    const e = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'hi' }] })
      .catch((err) => err);
    expect(e.status).toBe(502);
    expect(JSON.stringify(e.error)).not.toContain('127.0.0.1');
    expect(JSON.stringify(e.error)).not.toContain('wrong');
  }
});

test('the configuration refuses settings of another provider type', () => {
  const { parseConfig } = require('../../src/services/app') as typeof import('../../src/services/app');
  expect(() =>
    parseConfig(
      'providers: { a: { type: openai, base_url: "http://x", api_version: 2024-10-21 } }\nmodels: [ { id: m, kind: chat, routes: [ { provider: a } ] } ]\n',
      'c.yaml',
    ),
  ).toThrow("c.yaml:1:55: providers.a: unknown setting 'api_version' for a provider of type openai");
  expect(() =>
    parseConfig(
      'providers: { a: { type: azure } }\nmodels: [ { id: m, kind: chat, routes: [ { provider: a } ] } ]\n',
      'c.yaml',
    ),
  ).toThrow("missing required setting 'base_url'");
});
