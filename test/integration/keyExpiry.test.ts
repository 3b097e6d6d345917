/**
 * Keys with an expiry date: set and changed from the console (a past date is a 400) and the CLI; after it the key
 * gets 401 `Invalid API key` on its next request — also while it sits in a process's key cache.
 */
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/app';
import { registered } from '../helpers/console';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway(`
limits: { rpm: 0, tpm: 0 }
console: { registrations_per_address: 0 }
providers: { local: { type: mock } }
models: [ { id: m, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: local } ] } ]
`);
});

afterAll(() => gw?.close());

const ask = (secret: string) =>
  new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 }).chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
  });

test('a key stops working at its expiry, even while cached; the console shows and changes the date', async () => {
  const c = await registered(gw.url);
  const soon = new Date(Date.now() + 1500).toISOString();
  const created = await c.post('/console/api/keys', { name: 'short-lived', expires_at: soon });
  expect(created.status).toBe(201);
  expect(created.body.key.expires_at).toBe(soon);
  expect((await ask(created.body.secret)).choices).toHaveLength(1); // now cached in this process
  while (Date.now() <= Date.parse(soon)) await new Promise((r) => setTimeout(r, 100));
  const refused = await ask(created.body.secret).catch((e) => e);
  expect(refused.status).toBe(401);
  expect(refused.error).toMatchObject({ message: 'Invalid API key', code: 'invalid_api_key', reason: 'key_expired' });
  // a later date brings it back; null means never
  const later = new Date(Date.now() + 86_400_000).toISOString();
  const moved = await c.patch(`/console/api/keys/${created.body.key.id}`, { expires_at: later });
  expect(moved.body.expires_at).toBe(later);
  expect((await ask(created.body.secret)).choices).toHaveLength(1);
  expect((await c.patch(`/console/api/keys/${created.body.key.id}`, { expires_at: null })).body.expires_at).toBeNull();
});

test('an expiry in the past or not a date is a 400 naming the field', async () => {
  const c = await registered(gw.url);
  const past = await c.post('/console/api/keys', { expires_at: '2020-01-01T00:00:00Z' });
  expect(past.status).toBe(400);
  expect(past.body.error).toMatchObject({
    param: 'expires_at',
    message: "Invalid value for 'expires_at': must be in the future",
  });
  const junk = await c.post('/console/api/keys', { expires_at: 'tomorrow' });
  expect(junk.status).toBe(400);
  expect(junk.body.error.param).toBe('expires_at');
});
