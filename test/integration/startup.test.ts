/**
 * What start-up leaves for later, as a user would notice it: the console's and operators' request validators are
 * compiled at their first use (src/http/api.ts, COMPILED_AT_START), so the very first request of each after a start
 * must be validated exactly as later ones are; the API's are compiled before the gateway listens.
 */
import { startGateway, type TestGateway } from '../helpers/app';

const TOKEN = 'startup-admin-token';
const CONFIG = `
providers: { local: { type: mock } }
models:
  - { id: mock-chat, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: local } ] }
`;

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { ...process.env, ADMIN_TOKEN: TOKEN });
});
afterAll(async () => {
  await gw?.close();
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(gw.url + path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { error?: Record<string, unknown> } };
}

test('the first request of a console call compiled at first use is refused as the contract says, and so is the next', async () => {
  for (let i = 0; i < 2; i++) {
    const r = await call('POST', '/console/api/register', { email: 'someone@example.com' });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'missing_required_parameter',
      param: 'password',
      message: "Missing required parameter: 'password'.",
    });
  }
});

test("the first request of an operators' call with a path parameter is validated and coerced", async () => {
  const auth = { authorization: `Bearer ${TOKEN}` };
  const bad = await call('GET', '/admin/api/accounts/not-a-number', undefined, auth);
  expect(bad.status).toBe(400);
  expect(bad.body.error).toMatchObject({ type: 'invalid_request_error', param: 'id' });
  const missing = await call('GET', '/admin/api/accounts/999999', undefined, auth); // "999999" coerced to a number
  expect(missing.status).toBe(404);
});

test('the first paid request after start is validated (its validators were compiled before listening)', async () => {
  const { secret } = await gw.newKey({}, 1_000_000);
  const r = await call(
    'POST',
    '/v1/chat/completions',
    { model: 'mock-chat', messages: [{ role: 'bot', content: 'hi' }] },
    { authorization: `Bearer ${secret}` },
  );
  expect(r.status).toBe(400);
  expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param: 'messages[0].role' });
});
