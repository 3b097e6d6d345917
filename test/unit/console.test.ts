/** Console building blocks without a server: password rules and hashing, codes, cookies, the `console` settings. */
import crypto from 'node:crypto';
import { hashPassword, passwordProblem, passwordStrength, verifyPassword } from '../../src/accounts/passwords';
import { canonicalCode, randomCode } from '../../src/accounts/accounts';
import { parseConfig } from '../../src/services/app';
import { readCookie, sessionCookie, timeParam, usdParam } from '../../src/services/views';

const MODELS = `providers: { m: { type: mock } }\nmodels: [ { id: x, kind: chat, routes: [ { provider: m } ] } ]\n`;

test('password rules', async () => {
  expect(await passwordProblem('short1!', 'a@b.co')).toMatch(/at least 10/);
  expect(await passwordProblem('onlyletters', 'a@b.co')).toMatch(/letters only/);
  expect(await passwordProblem('ÄöüßÉèñçàé', 'a@b.co')).toMatch(/letters only/);
  expect(await passwordProblem('1234567890', 'a@b.co')).toMatch(/digits only/);
  expect(await passwordProblem('Ada@Example.com', 'ada@example.com')).toMatch(/email/);
  expect(await passwordProblem('correct horse 42', 'ada@example.com')).toBeNull();
  expect(await passwordProblem('x'.repeat(201) + '1', 'a@b.co')).toMatch(/at most 200/);
});

test('passwords that are easy to guess are refused with the advice of zxcvbn; the email counts as known', async () => {
  expect(await passwordProblem('password123', 'a@b.co')).toBe(
    'Password is too easy to guess: This is a commonly used password. Add more words that are less common.',
  );
  expect(await passwordProblem('P@ssw0rd2024!', 'a@b.co')).toMatch(/^Password is too easy to guess: .*commonly used/);
  expect(await passwordProblem('qwertyuiop123', 'a@b.co')).toMatch(/^Password is too easy to guess/);
  // the address's own words are what an attacker tries first
  expect(await passwordProblem('lovelace.ada1', 'ada.lovelace@example.com')).toMatch(/too easy to guess/);
  expect(await passwordProblem('lovelace.ada1', 'grace@example.com')).toBeNull();
  expect(await passwordStrength('correct horse 42')).toMatchObject({ score: 4, warning: null });
  // only the first 32 characters are scored (the matchers' cost grows with length): a weak start is still weak
  expect(await passwordProblem('password1234'.repeat(10), 'a@b.co')).toMatch(/too easy to guess/);
});

test('scrypt hashes: salted, parameters stored, verified in constant time, old parameters flagged', async () => {
  const [a, b] = await Promise.all([hashPassword('correct horse 42'), hashPassword('correct horse 42')]);
  expect(a).not.toBe(b);
  expect(await verifyPassword('correct horse 42', a)).toEqual({ ok: true, stale: false });
  expect(await verifyPassword('correct horse 43', a)).toEqual({ ok: false, stale: false });
  expect(await verifyPassword('anything', null)).toEqual({ ok: false, stale: false });
  expect(await verifyPassword('anything', 'garbage')).toEqual({ ok: false, stale: false });
  const salt = crypto.randomBytes(16);
  const old = `scrypt$16384$8$1$${salt.toString('base64url')}$${crypto.scryptSync('pw with 1 digit', salt, 32, { N: 16384, r: 8, p: 1 }).toString('base64url')}`;
  expect(await verifyPassword('pw with 1 digit', old)).toEqual({ ok: true, stale: true });
});

test('codes: Crockford base32, compared without case, spaces or dashes', () => {
  expect(randomCode(20)).toMatch(/^[0-9A-HJKMNP-TV-Z]{20}$/);
  expect(canonicalCode(' sy-7kq2m 9xdab-4HX8P-2wqnr ')).toBe('SY7KQ2M9XDAB4HX8P2WQNR');
});

test('cookies', () => {
  expect(sessionCookie('abc', 86_400_000, true)).toBe(
    'sy_session=abc; Max-Age=86400; Path=/; HttpOnly; SameSite=Lax; Secure',
  );
  expect(readCookie('a=1; sy_session=xyz; b=2', 'sy_session')).toBe('xyz');
  expect(readCookie('xsy_session=1', 'sy_session')).toBeUndefined();
  expect(readCookie(undefined, 'sy_session')).toBeUndefined();
});

test('amounts and times from requests', () => {
  expect(usdParam('12.5', 'x')).toBe(12_500_000);
  expect(usdParam(0.1, 'x')).toBe(100_000);
  expect(() => usdParam(1e-7, 'x')).toThrow(/at most 6 decimals/);
  expect(() => usdParam('-1', 'x')).toThrow(/negative/);
  expect(usdParam('-1', 'x', { allowNegative: true })).toBe(-1_000_000);
  expect(timeParam('2026-11-01', 'from')).toBe(Date.UTC(2026, 10, 1));
  expect(timeParam('2026-11-01T10:00:00', 'from')).toBe(Date.UTC(2026, 10, 1, 10));
  expect(timeParam('2026-11-01T10:00:00+01:00', 'from')).toBe(Date.UTC(2026, 10, 1, 9));
  expect(timeParam(undefined, 'from')).toBeUndefined();
  expect(() => timeParam('last week', 'from')).toThrow(/ISO 8601/);
});

test('the console settings: defaults, and errors that name the setting', () => {
  expect(parseConfig(MODELS).console).toEqual({
    starter_credits_micros: 1_000_000,
    referral_credits_micros: 20_000_000,
    session_ttl_ms: 30 * 86_400_000,
    public_url: null,
    topup_min_micros: 5_000_000,
    topup_max_micros: 1_000_000_000,
    login_attempts_per_email: 10,
    login_attempts_per_email_daily: 100,
    login_attempts_per_address: 50,
    login_window_s: 900,
    registrations_per_address: 20,
    registration_window_s: 3600,
    referrals_per_month: 10,
    disposable_domains: expect.arrayContaining(['mailinator.com', 'yopmail.com', 'guerrillamail.com']),
    captcha: null,
    topup_note: null,
  });
  expect(parseConfig(`console: { topup_note: ' Ask the front desk. ' }\n${MODELS}`).console.topup_note).toBe(
    'Ask the front desk.',
  );
  expect(parseConfig(`console: { disposable_domains: [Example.ORG] }\n${MODELS}`).console.disposable_domains).toEqual([
    'example.org',
  ]);
  expect(
    parseConfig(`console: { starter_credits_usd: 0.5, referral_credits_usd: 0 }\n${MODELS}`).console,
  ).toMatchObject({
    starter_credits_micros: 500_000,
    referral_credits_micros: 0,
  });
  expect(() => parseConfig(`console:\n  topup_min_usd: 5.001\n${MODELS}`, 'c.yaml')).toThrow(
    /^c\.yaml:2:\d+: console\.topup_min_usd: must be whole cents/,
  );
  expect(() => parseConfig(`console: { topup_min_usd: 50, topup_max_usd: 10 }\n${MODELS}`)).toThrow(
    /console\.topup_max_usd: must not be below topup_min_usd/,
  );
  expect(() => parseConfig(`console: { public_url: "https://x.example/path" }\n${MODELS}`)).toThrow(
    /console\.public_url/,
  );
  expect(() => parseConfig(`console: { referal_credits_usd: 5 }\n${MODELS}`)).toThrow(
    /unknown setting 'referal_credits_usd'/,
  );
  // mailed links must not take their host from the request (a reset link for someone else's address, Host: attacker)
  expect(() => parseConfig(`mail: { smtp_url: "smtp://127.0.0.1:25" }\n${MODELS}`, 'c.yaml')).toThrow(
    /^c\.yaml:1:\d+: mail\.smtp_url: mailed links need console\.public_url/,
  );
  expect(
    parseConfig(`mail: { smtp_url: "smtp://127.0.0.1:25" }\nconsole: { public_url: "https://sy.example" }\n${MODELS}`)
      .mail.smtp_url,
  ).toBe('smtp://127.0.0.1:25');
  expect(parseConfig(MODELS).mail.smtp_url).toBeNull(); // no SMTP: links go to the log, no public_url needed
});

describe('addressKey: what per-address limits count', () => {
  const { addressKey } =
    require('../../src/services/consoleLimits') as typeof import('../../src/services/consoleLimits');
  test.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
  ])('%s → %s', (address, key) => {
    expect(addressKey(address)).toBe(key);
  });
});

describe('which addresses are one mailbox (once-per-mailbox credits)', () => {
  const { emailKey, normaliseEmail } =
    require('../../src/accounts/accounts') as typeof import('../../src/accounts/accounts');
  test.each([
    ['a.d.a+farm@gmail.com', 'ada@gmail.com'], // Gmail ignores dots and +tags
    ['A.DA@GoogleMail.com', 'ada@gmail.com'], // googlemail.com is gmail.com
    ['a.da+x@example.com', 'a.da@example.com'], // elsewhere dots count (Google Workspace domains too); +tags do not
    ['ada@mail.gmail.com', 'ada@mail.gmail.com'], // not gmail.com itself
  ])('%s is the mailbox %s', (address, key) => expect(emailKey(normaliseEmail(address))).toBe(key));
  test.each([
    'me@gmail.com,1',
    'x<me@gmail.com>y.z',
    'ada@gmail.com.',
    '"ada"@gmail.com',
    'ada@-gmail.com',
    'ada@gmail',
  ])('%s is refused', (address) => expect(() => normaliseEmail(address)).toThrow(/not an email address/));
});

test("zxcvbn's lists are loaded in a worker thread, not in the server's heap", async () => {
  const before = process.memoryUsage().heapUsed;
  expect(await passwordStrength('Tr0ub4dour&3 staple')).toHaveProperty('score');
  expect(await passwordProblem('password123', 'a@b.co')).toMatch(/commonly used/);
  // In this thread the lists took ~40 MB (49k + 7.8k words and their ranked maps).
  expect(process.memoryUsage().heapUsed - before).toBeLessThan(15e6);
});
