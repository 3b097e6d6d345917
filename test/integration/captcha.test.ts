/**
 * The optional CAPTCHA on registration, checked server-side against a siteverify endpoint on loopback that answers
 * as Turnstile's does (form-encoded secret, response, remoteip; `{"success": ...}`). Off by default; when on, the
 * console learns the provider and public key (never the secret) and its page may load the widget (CSP).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/app';
import { ConsoleClient, PASSWORD, uniqueEmail } from '../helpers/console';
import { csp } from '../../src/http/consoleStatic';

let gw: TestGateway;
let verifier: http.Server;
let verifyUrl: string;
const received: URLSearchParams[] = [];

beforeAll(async () => {
  verifier = http.createServer((req, res) => {
    let body = '';
    req
      .on('data', (d) => (body += d))
      .on('end', () => {
        const form = new URLSearchParams(body);
        received.push(form);
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify(
            form.get('response') === 'good-token'
              ? { success: true }
              : { success: false, 'error-codes': ['invalid-input-response'] },
          ),
        );
      });
  });
  await new Promise<void>((r) => verifier.listen(0, '127.0.0.1', () => r()));
  verifyUrl = `http://127.0.0.1:${(verifier.address() as AddressInfo).port}/turnstile/v0/siteverify`;
  gw = await startGateway(
    `
console:
  registrations_per_address: 0
  captcha: { provider: turnstile, site_key: 0x4AAAAAAAtest, secret: "\${CAPTCHA_SECRET}", verify_url: "${verifyUrl}" }
providers: { local: { type: mock } }
models: [ { id: m, kind: chat, routes: [ { provider: local } ] } ]
`,
    { ...process.env, CAPTCHA_SECRET: 'the-turnstile-secret' },
  );
});

afterAll(async () => {
  await gw?.close();
  await new Promise<void>((r) => verifier.close(() => r()));
});

const register = (captcha_token?: string) =>
  new ConsoleClient(gw.url).post('/console/api/register', {
    email: uniqueEmail(),
    password: PASSWORD,
    ...(captcha_token !== undefined && { captcha_token }),
  });

test('the console learns the provider and the public key, never the secret', async () => {
  const r = await new ConsoleClient(gw.url).get('/console/api/config');
  expect(r.body).toMatchObject({ captcha: { provider: 'turnstile', site_key: '0x4AAAAAAAtest' } });
  expect(JSON.stringify(r.body)).not.toContain('the-turnstile-secret');
});

test('registration needs a token the provider accepts; the check sends the secret, the token and the client address', async () => {
  const none = await register();
  expect(none.status).toBe(400);
  expect(none.body.error).toMatchObject({ param: 'captcha_token', code: 'captcha_required' });
  const bad = await register('bad-token');
  expect(bad.status).toBe(400);
  expect(bad.body.error).toMatchObject({ param: 'captcha_token', code: 'captcha_failed' });
  const good = await register('good-token');
  expect(good.status).toBe(201);
  expect(Object.fromEntries(received.at(-1)!)).toEqual({
    secret: 'the-turnstile-secret',
    response: 'good-token',
    remoteip: '127.0.0.1',
  });
});

test('a provider that cannot be reached refuses the registration with a clear 400, not a 500', async () => {
  await new Promise<void>((r) => verifier.close(() => r()));
  const r = await register('good-token');
  expect(r.status).toBe(400);
  expect(r.body.error).toMatchObject({ param: 'captcha_token', code: 'captcha_unavailable' });
  await new Promise<void>((r2) => verifier.listen(Number(new URL(verifyUrl).port), '127.0.0.1', () => r2()));
});

test("the console page's CSP allows the provider's widget only when a CAPTCHA is on", () => {
  expect(csp(null)).toContain("script-src 'self';");
  expect(csp(null)).toContain("frame-src 'none'");
  expect(csp('turnstile')).toContain("script-src 'self' https://challenges.cloudflare.com;");
  expect(csp('turnstile')).toContain('frame-src https://challenges.cloudflare.com');
});
