/**
 * The contract imports cleanly into a client generator: openapi-fetch, typed by the openapi-typescript output in
 * generated/, talks to the real server. A wrong field name or type here fails `tsc`, a wrong answer fails the test.
 */
import createClient from 'openapi-fetch';
import type { paths } from '../../generated/openapi';
import { startGateway, type TestGateway } from '../helpers/app';

let gw: TestGateway;
let client: ReturnType<typeof createClient<paths>>;

beforeAll(async () => {
  gw = await startGateway(`
providers: { local: { type: mock } }
models:
  - { id: mock-chat, kind: chat, owned_by: switchyard, routes: [ { provider: local } ] }
  - { id: mock-embedding, kind: embedding, routes: [ { provider: local } ] }
`);
  const { secret } = await gw.newKey();
  client = createClient<paths>({ baseUrl: gw.url, headers: { Authorization: `Bearer ${secret}` } });
});

afterAll(() => gw?.close());

test('typed calls to every operation', async () => {
  const models = await client.GET('/v1/models');
  expect(models.data?.data.map((m) => m.id)).toEqual(['mock-chat', 'mock-embedding']);

  const one = await client.GET('/v1/models/{model}', { params: { path: { model: 'mock-chat' } } });
  expect(one.data).toEqual({ id: 'mock-chat', object: 'model', created: expect.any(Number), owned_by: 'switchyard' });

  const chat = await client.POST('/v1/chat/completions', {
    body: {
      model: 'mock-chat',
      messages: [
        { role: 'system', content: 'terse' },
        { role: 'user', content: 'hi' },
      ],
      temperature: 0,
    },
  });
  expect(json(chat.data).choices[0].message.content).toBe('This is a mock answer. You said: hi');

  const completion = await client.POST('/v1/completions', { body: { model: 'mock-chat', prompt: 'hi' } });
  expect(json(completion.data).object).toBe('text_completion');

  const emb = await client.POST('/v1/embeddings', {
    body: { model: 'mock-embedding', input: ['a', 'b'], dimensions: 4 },
  });
  expect(emb.data?.data).toHaveLength(2);
  expect(emb.data?.data[0].embedding).toHaveLength(4);
});

test('typed error bodies', async () => {
  const res = await client.POST('/v1/chat/completions', {
    body: { model: 'nope', messages: [{ role: 'user', content: 'x' }] },
  });
  expect(res.response.status).toBe(400);
  expect(res.error?.error).toEqual({
    message: 'Model not found: nope',
    type: 'invalid_request_error',
    param: 'model',
    code: 'model_not_found',
  });
});

/** A 200 of a streaming operation is JSON or an SSE string; without `stream` it is the JSON one. */
function json<T>(data: T | string | undefined): T {
  if (data === undefined || typeof data === 'string') throw new Error(`expected a JSON body, got ${String(data)}`);
  return data;
}
