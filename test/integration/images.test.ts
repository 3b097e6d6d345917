/**
 * POST /v1/images/generations through the official `openai` SDK's `client.images.generate`: DALL·E priced per image
 * by size and quality, gpt-image-1 by the tokens it reports, the mock provider's PNG, Azure's deployments. The
 * balance changes by exactly the documented price; a request the money cannot pay for — `n: 10` at the dearest size —
 * is refused before anything reaches the upstream. On the database in DATABASE_URL.
 */
import OpenAI from 'openai';
import { AZURE_KEY, FakeAzure } from '../fakes/azureUpstream';
import { FAKE_PNG, FakeOpenAI, GPT_IMAGE_TOKENS } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { registered, type ConsoleClient } from '../helpers/console';

let openai: FakeOpenAI;
let azure: FakeAzure;
let gw: TestGateway;

const DALLE_PRICES = `{ 1024x1024/standard: 0.04, 1024x1024/hd: 0.08, 1792x1024/standard: 0.08, 1792x1024/hd: 0.12, 1024x1792/standard: 0.08, 1024x1792/hd: 0.12 }`;
const GPT_TOKENS = `{ ${Object.entries(GPT_IMAGE_TOKENS)
  .map(([grade, n]) => `${grade}: ${n}`)
  .join(', ')} }`;

beforeAll(async () => {
  openai = await new FakeOpenAI().start();
  azure = await new FakeAzure().start();
  gw = await startGateway(
    `
console: { registrations_per_address: 0, starter_credits_usd: 10 }
limits: { rpm: 0, tpm: 0 }
providers:
  up: { type: openai, base_url: "${openai.url}" }
  az: { type: azure, base_url: "${azure.url}", api_key: "${AZURE_KEY}" }
  local: { type: mock }
models:
  - { id: dall-e-3, kind: image, price: { images: ${DALLE_PRICES} }, routes: [ { provider: up } ] }
  - { id: gpt-image-1, kind: image, price: { input: 5, output: 40 }, image_output_tokens: ${GPT_TOKENS}, routes: [ { provider: up } ] }
  - { id: mock-image, kind: image, price: { images: { 1024x1024/standard: 0.02 } }, routes: [ { provider: local } ] }
  - { id: azure-dalle, kind: image, price: { images: ${DALLE_PRICES} }, routes: [ { provider: az, model: dalle-prod } ] }
  - { id: gpt-image-flat, kind: image, price: { images: { 1024x1024/medium: 0.042, 1024x1024/high: 0.167 } }, routes: [ { provider: up, model: gpt-image-1 } ] }
  - { id: gpt, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: up } ] }
`,
  );
});

afterAll(async () => {
  await gw?.close();
  await openai?.close();
  await azure?.close();
});

/** A new account with `usd` micro-USD and a key: an SDK client, and its balance and usage records. */
async function account(micros = 10_000_000, scopes?: string[]) {
  const k = await gw.newKey(scopes ? { scopes: scopes as never } : {}, micros);
  const client = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const balance = async () => {
    await gw.settled();
    return Number((await gw.app.db('accounts').where('id', k.accountId).first()).balance_micros);
  };
  return { ...k, client, balance };
}

const record = async (requestId: string) => {
  await gw.settled();
  return gw.app.db('usage_records').where('request_id', requestId).first();
};

describe('the SDK gets its images, and the balance changes by exactly the price', () => {
  test('DALL·E 3 at 1024x1024 in hd: 0.08 USD an image; base64 asked of the upstream', async () => {
    const a = await account();
    const { data, response } = await a.client.images
      .generate({ model: 'dall-e-3', prompt: 'A cute baby sea otter', size: '1024x1024', quality: 'hd' })
      .withResponse();
    expect(data.data).toEqual([{ b64_json: FAKE_PNG, revised_prompt: 'Revised: A cute baby sea otter' }]);
    expect(Buffer.from(data.data![0].b64_json!, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(openai.last().body).toMatchObject({ model: 'dall-e-3', response_format: 'b64_json', quality: 'hd' });
    expect(10_000_000 - (await a.balance())).toBe(80_000);
    const r = await record(response.headers.get('x-request-id')!);
    expect(r).toMatchObject({ images: 1, prompt_tokens: expect.any(Number), completion_tokens: 0 });
    expect(Number(r.cost_micros)).toBe(80_000);
  });

  test('three images: three times the price, and the console shows them as a class of their own', async () => {
    const owner: ConsoleClient = await registered(gw.url);
    const { body } = await owner.post('/console/api/keys', { name: 'images' });
    const client = new OpenAI({ apiKey: body.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const before = (await owner.get('/console/api/account')).body;
    await client.images.generate({ model: 'mock-image', prompt: 'x', n: 3, size: '1024x1024', quality: 'standard' });
    await gw.settled();
    const page = (await owner.get('/console/api/usage')).body;
    expect(page.data[0]).toMatchObject({ model: 'mock-image', usage: { images: 3 }, cost_usd: '0.060000' });
    expect(page.classes).toContainEqual({ name: 'images', label: 'generated', unit: 'image', part_of: null });
    const after = (await owner.get('/console/api/account')).body;
    expect(Number(before.balance_usd) - Number(after.balance_usd)).toBeCloseTo(0.06, 6);
    // the console's model list says what an image costs, by size and quality
    const models = (await owner.get('/console/api/models')).body.data;
    expect(models.find((m: { id: string }) => m.id === 'dall-e-3')).toMatchObject({
      kind: 'image',
      usd_per_image: { '1024x1024/standard': '0.040000', '1792x1024/hd': '0.120000' },
      grade_prices: { images: { '1024x1024/standard': '0.040000', '1792x1024/hd': '0.120000' } },
      prices: {},
    });
    expect(models.find((m: { id: string }) => m.id === 'gpt-image-1')).not.toHaveProperty('usd_per_image');
    expect(models.find((m: { id: string }) => m.id === 'gpt-image-1')).toMatchObject({
      prices: { prompt: '5.000000', completion: '40.000000' },
      grade_prices: {},
    });
    const [today] = (await owner.get('/console/api/usage/daily?days=1')).body.data;
    expect(today.usage).toMatchObject({ images: 3, completion: 0 });
  });

  test('gpt-image-1: its prompt at input and its image tokens at output, from the usage it reports', async () => {
    const a = await account();
    const { data, response } = await a.client.images
      .generate({ model: 'gpt-image-1', prompt: 'a red fox in snow', quality: 'medium', size: '1024x1024' })
      .withResponse();
    expect(data.data).toEqual([{ b64_json: FAKE_PNG }]);
    expect(data.usage).toMatchObject({ input_tokens: 5, output_tokens: 1_056 });
    expect(openai.last().body).not.toHaveProperty('response_format'); // the GPT image models refuse it
    // 5 × 5 + 1,056 × 40 = 25 + 42,240 µUSD
    expect(10_000_000 - (await a.balance())).toBe(42_265);
    expect(await record(response.headers.get('x-request-id')!)).toMatchObject({
      prompt_tokens: 5,
      completion_tokens: 1_056,
      images: 1,
      counted: 'upstream',
    });
  });

  test('the mock provider answers a valid PNG', async () => {
    const a = await account();
    const res = await a.client.images.generate({ model: 'mock-image', prompt: 'x' });
    const png = Buffer.from(res.data![0].b64_json!, 'base64');
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.readUInt32BE(16)).toBe(1); // IHDR: 1 pixel wide
    expect(10_000_000 - (await a.balance())).toBe(20_000);
  });

  test("Azure: the deployment's images path, and the same prices", async () => {
    const a = await account();
    await a.client.images.generate({ model: 'azure-dalle', prompt: 'x', size: '1792x1024', quality: 'standard' });
    expect(azure.last().path).toBe('/openai/deployments/dalle-prod/images/generations?api-version=2024-10-21');
    expect(azure.last().body).toMatchObject({ model: 'dalle-prod', response_format: 'b64_json' });
    expect(10_000_000 - (await a.balance())).toBe(80_000);
  });
});

describe('size and quality decide the price', () => {
  test('left out (DALL·E says not which it made): held and charged at the dearest the model is sold at', async () => {
    const a = await account();
    await a.client.images.generate({ model: 'dall-e-3', prompt: 'x' });
    expect(10_000_000 - (await a.balance())).toBe(120_000);
  });

  test('a size without a quality: the dearest quality of that size', async () => {
    const a = await account();
    await a.client.images.generate({ model: 'dall-e-3', prompt: 'x', size: '1024x1024' });
    expect(10_000_000 - (await a.balance())).toBe(80_000);
  });

  test('quality auto on a model that says what it made: charged at what it made', async () => {
    const a = await account();
    const res = await a.client.images.generate({ model: 'gpt-image-1', prompt: 'x', quality: 'auto', size: 'auto' });
    expect(res).toMatchObject({ size: '1024x1024', quality: 'medium' });
    expect(10_000_000 - (await a.balance())).toBe(5 + 1_056 * 40);
  });

  test('priced per image, held at the dearest quality, charged at the one the upstream says it made', async () => {
    const a = await account(200_000);
    await a.client.images.generate({ model: 'gpt-image-flat', prompt: 'x', size: '1024x1024' });
    expect(openai.last().body).toMatchObject({ model: 'gpt-image-1', size: '1024x1024' });
    expect(200_000 - (await a.balance())).toBe(42_000); // made at medium (held at high: 167,000)
    await expect(
      a.client.images.generate({ model: 'gpt-image-flat', prompt: 'x', size: '1024x1024' }),
    ).rejects.toMatchObject({ status: 429 }); // 158,000 left: not enough for the hold of one high-quality image
  });

  test('a size or quality the model is not sold at: 400 before anything is sent', async () => {
    const a = await account();
    const before = openai.requests.length;
    await expect(a.client.images.generate({ model: 'dall-e-3', prompt: 'x', size: '512x512' })).rejects.toMatchObject({
      status: 400,
      param: 'size',
    });
    await expect(a.client.images.generate({ model: 'dall-e-3', prompt: 'x', quality: 'low' })).rejects.toMatchObject({
      status: 400,
      param: 'quality',
    });
    expect(openai.requests.length).toBe(before);
    expect(await a.balance()).toBe(10_000_000);
  });
});

describe('holds cannot be beaten', () => {
  test('n: 10 at the dearest size and quality, on an account that has 1 USD: 429 and nothing sent', async () => {
    const a = await account(1_000_000);
    const before = openai.requests.length;
    const asked = { model: 'dall-e-3', prompt: 'x', n: 10, size: '1792x1024', quality: 'hd' } as const;
    const e = await a.client.images.generate(asked).catch((x: unknown) => x);
    expect(e).toMatchObject({ status: 429, code: 'insufficient_quota' });
    expect(openai.requests.length).toBe(before);
    // sizes and qualities left out are held at the dearest: refused just the same
    await expect(a.client.images.generate({ model: 'dall-e-3', prompt: 'x', n: 10 })).rejects.toMatchObject({
      status: 429,
    });
    expect(openai.requests.length).toBe(before);
    expect(await a.balance()).toBe(1_000_000);
    // what the money covers is served: 10 × 0.04 USD
    await a.client.images.generate({ ...asked, size: '1024x1024', quality: 'standard' });
    expect(openai.requests.length).toBe(before + 1);
    expect(await a.balance()).toBe(600_000);
  });

  test('token-priced: n images of the dearest grade are held in full, never sent with a lower allowance', async () => {
    // 10 × 6,240 × 40 µUSD = 2.496 USD beyond the prompt: 2 USD cannot pay for it
    const a = await account(2_000_000);
    const before = openai.requests.length;
    await expect(
      a.client.images.generate({ model: 'gpt-image-1', prompt: 'x', n: 10, size: '1536x1024', quality: 'high' }),
    ).rejects.toMatchObject({ status: 429, code: 'insufficient_quota' });
    await expect(a.client.images.generate({ model: 'gpt-image-1', prompt: 'x', n: 10 })).rejects.toMatchObject({
      status: 429,
    });
    expect(openai.requests.length).toBe(before);
    expect(await a.balance()).toBe(2_000_000);
  });
});

describe('what the gateway refuses', () => {
  test('response_format url: 400 (the gateway hosts no images); b64_json passes', async () => {
    const a = await account();
    const before = openai.requests.length;
    await expect(
      a.client.images.generate({ model: 'dall-e-3', prompt: 'x', size: '1024x1024', response_format: 'url' }),
    ).rejects.toMatchObject({ status: 400, param: 'response_format', type: 'invalid_request_error' });
    expect(openai.requests.length).toBe(before);
    const ok = await a.client.images.generate({ model: 'dall-e-3', prompt: 'x', response_format: 'b64_json' });
    expect(ok.data![0].b64_json).toBe(FAKE_PNG);
  });

  test('a stream: 400', async () => {
    const a = await account();
    const res = await fetch(`${gw.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-image-1', prompt: 'x', stream: true, partial_images: 2 }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: object }).error).toMatchObject({ param: 'stream', code: 'invalid_value' });
  });

  test('n above 10, a chat model, a key without the images scope', async () => {
    const a = await account();
    await expect(a.client.images.generate({ model: 'dall-e-3', prompt: 'x', n: 11 })).rejects.toMatchObject({
      status: 400,
      param: 'n',
    });
    await expect(a.client.images.generate({ model: 'gpt', prompt: 'x' })).rejects.toMatchObject({
      status: 400,
      code: 'model_not_supported',
    });
    const chatOnly = await account(10_000_000, ['chat']);
    await expect(chatOnly.client.images.generate({ model: 'dall-e-3', prompt: 'x' })).rejects.toMatchObject({
      status: 403,
    });
  });

  test('an upstream that answers URLs anyway: 502, nothing charged', async () => {
    const a = await account();
    openai.plan({ kind: 'json', body: { created: 1, data: [{ url: 'https://images.example/x.png' }] } });
    const e = await a.client.images.generate({ model: 'dall-e-3', prompt: 'x' }).catch((x: unknown) => x);
    expect(e).toMatchObject({ status: 502 });
    expect(JSON.stringify((e as { error?: unknown }).error)).not.toContain('images.example');
    expect(await a.balance()).toBe(10_000_000);
  });
});
