/**
 * Per-address limits behind reverse proxies. The client is the rightmost X-Forwarded-For entry that no trusted proxy
 * wrote (proxy-addr): trusted proxies are listed (addresses / CIDRs) or counted (hops). Entries a client writes
 * itself, to the left, never count; `trust_proxy: true` is refused.
 */
import { ConsoleClient, PASSWORD, uniqueEmail } from '../helpers/console';
import { mailedToken, startGateway, type TestGateway } from '../helpers/app';
import { parseConfig } from '../../src/services/app';

const config = (trust: string) => `
server: { trust_proxy: ${trust} }
console: { registrations_per_address: 2 }
providers: { local: { type: mock } }
models: [ { id: m, kind: chat, routes: [ { provider: local } ] } ]
`;

async function register(gw: TestGateway, forwardedFor: string): Promise<number> {
  const r = await new ConsoleClient(gw.url).call(
    'POST',
    '/console/api/register',
    { email: uniqueEmail(), password: PASSWORD },
    { headers: { 'x-forwarded-for': forwardedFor } },
  );
  return r.status;
}

async function withGateway(trust: string, run: (gw: TestGateway) => Promise<void>): Promise<void> {
  const gw = await startGateway(config(trust));
  try {
    await run(gw);
  } finally {
    await gw.close();
  }
}

// The test's requests come from 127.0.0.1: that is the proxy in front of the gateway.
test('trusted proxies by address: each client the proxy saw has its own allowance; what the client wrote to the left does not count', async () => {
  await withGateway('[127.0.0.1/8]', async (gw) => {
    expect([
      await register(gw, '203.0.113.1'),
      await register(gw, '203.0.113.1'),
      await register(gw, '203.0.113.1'),
    ]).toEqual([201, 201, 429]);
    // a forged entry to the left of the one the proxy appended: still 203.0.113.1
    expect(await register(gw, '198.51.100.7, 203.0.113.1')).toBe(429);
    expect(await register(gw, '203.0.113.2')).toBe(201);
    // a chain of trusted proxies: the rightmost untrusted entry is the client
    expect(await register(gw, '203.0.113.3, 127.0.0.5')).toBe(201);
  });
});

test('behind a trusted proxy that says the client came over https, the cookie is Secure and links use https', async () => {
  await withGateway('[127.0.0.1/8]', async (gw) => {
    const r = await new ConsoleClient(gw.url).call(
      'POST',
      '/console/api/register',
      { email: uniqueEmail(), password: PASSWORD },
      { headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.40' } },
    );
    expect(r.status).toBe(201);
    expect(r.cookies[0]).toMatch(/; HttpOnly; SameSite=Lax; Secure$/);
    expect(r.body.account.referral_link).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/console\/register\?ref=/);
  });
});

test('trusted proxies by hop count: one proxy in front, so only the entry it appended counts', async () => {
  await withGateway('1', async (gw) => {
    expect([
      await register(gw, '198.51.100.1, 203.0.113.9'),
      await register(gw, '198.51.100.2, 203.0.113.9'),
      await register(gw, '198.51.100.3, 203.0.113.9'),
    ]).toEqual([201, 201, 429]);
  });
});

test('untrusted (the default): a client cannot dodge the limit by sending X-Forwarded-For', async () => {
  await withGateway('false', async (gw) => {
    expect([
      await register(gw, '198.51.100.1'),
      await register(gw, '198.51.100.2'),
      await register(gw, '198.51.100.3'),
    ]).toEqual([201, 201, 429]);
  });
});

test('failed log-ins: a stranger who guesses wrong locks out only himself; guesses spread over many addresses meet the daily limit per email', async () => {
  const gw = await startGateway(`
server: { trust_proxy: [127.0.0.1/8] }
console: { login_attempts_per_email: 3, login_attempts_per_email_daily: 8, login_attempts_per_address: 50, registrations_per_address: 0 }
providers: { local: { type: mock } }
models: [ { id: m, kind: chat, routes: [ { provider: local } ] } ]
`);
  try {
    const email = uniqueEmail();
    expect((await new ConsoleClient(gw.url).register(email)).status).toBe(201);
    const login = (from: string, password = PASSWORD) =>
      new ConsoleClient(gw.url)
        .call('POST', '/console/api/login', { email, password }, { headers: { 'x-forwarded-for': from } })
        .then((r) => r.status);
    for (let i = 0; i < 3; i++) expect(await login('203.0.113.66', `wrong password ${i}`)).toBe(401);
    expect(await login('203.0.113.66')).toBe(429); // the stranger's address is done for the window, even with the right password
    expect(await login('198.51.100.5')).toBe(200); // the owner, from home, is not
    // guesses from many addresses: 3 + 5 more failures make 8 a day for this email, then new addresses are refused
    for (let i = 0; i < 5; i++) expect(await login(`192.0.2.${i + 1}`, `wrong password ${i}`)).toBe(401);
    expect(await login('192.0.2.100', 'another wrong one')).toBe(429);
    expect(await login('192.0.2.101')).toBe(429); // even with the right password, from an address never used
    // ...but not the owner, at an address it logged in from before: the stranger cannot shut it out for the day
    expect(await login('198.51.100.5')).toBe(200);
    expect(await login('198.51.100.5', 'a wrong guess at home')).toBe(401); // still counted per pair there
    // and a password reset by mail (proof of the mailbox) lets the owner in from anywhere again
    expect((await new ConsoleClient(gw.url).post('/console/api/password-reset', { email })).status).toBe(202);
    const token = mailedToken(gw.mails, email, '/console/reset')!;
    expect(
      (
        await new ConsoleClient(gw.url).post('/console/api/password-reset/confirm', {
          token,
          password: 'a fresh horse 12',
        })
      ).status,
    ).toBe(200);
    expect(await login('192.0.2.101', 'a fresh horse 12')).toBe(200);
  } finally {
    await gw.close();
  }
});

test('trust_proxy: true is refused, with what to write instead; a bad CIDR is refused', () => {
  expect(() => parseConfig(config('true'), 'switchyard.yaml')).toThrow(
    /server\.trust_proxy: true would trust any X-Forwarded-For a client writes; give the proxies instead/,
  );
  expect(() => parseConfig(config('[10.0.0.0/99]'), 'switchyard.yaml')).toThrow(
    /server\.trust_proxy: invalid range on address/,
  );
});
