/**
 * The console API over real HTTP, like the web UI uses it (cookie session + CSRF header): registration with starter
 * and referral credits, log-in and its limits, keys (and /v1 refusing disabled or deleted ones at once), redemption
 * codes (two concurrent redemptions: one wins), Stripe Checkout against a fake Stripe API on loopback and webhooks
 * signed with the library's own test helper (replays credit once, a bad signature nothing), usage, daily usage,
 * ledger — and nobody reaching another account's data. Runs on DATABASE_URL (SQLite, then MariaDB and PostgreSQL).
 */
import crypto from 'node:crypto';
import Stripe from 'stripe';
import OpenAI from 'openai';
import { mailedToken, startGateway, type TestGateway } from '../helpers/app';
import { ConsoleClient, PASSWORD, registered, uniqueEmail } from '../helpers/console';
import { schemaProblems } from '../helpers/contract';
import { FakeStripe, checkoutEvent } from '../fakes/stripeApi';
import { createCodes } from '../../src/billing/redemption';
import { post, DuplicateLedgerEntry } from '../../src/db/ledger';
import { verifyLedger } from '../../src/billing/verify';
import { SCOPES } from '../../src/contract';

const MODELS = `
providers: { local: { type: mock }, slow: { type: mock, latency_ms: 300 } }
models:
  - { id: mock-chat, kind: chat, owned_by: switchyard, price: { input: 1.5, output: 2 }, routes: [ { provider: local } ] }
  - { id: mock-embedding, kind: embedding, owned_by: switchyard, price: { input: 0.02 }, routes: [ { provider: local } ] }
  - { id: slow-chat, kind: chat, owned_by: switchyard, price: { input: 1, output: 1 }, routes: [ { provider: slow } ] }
  - { id: mock-tts, kind: speech, owned_by: switchyard, price: { characters: 15 }, routes: [ { provider: local } ] }
  - { id: mock-moderation, kind: moderation, owned_by: switchyard, routes: [ { provider: local } ] }
  - { id: mock-rerank, kind: rerank, owned_by: switchyard, price: { input: 0.02, search_unit: 2000 }, routes: [ { provider: local } ] }
`;
const WEBHOOK_SECRET = 'whsec_test_0123456789abcdef';
const SECRET_KEY = 'sk_test_switchyard0123456789';

let gw: TestGateway;
let stripeApi: FakeStripe;
const signer = new Stripe('sk_test_signer_only');

beforeAll(async () => {
  stripeApi = await new FakeStripe().start();
  gw = await startGateway(
    `console: { login_attempts_per_email: 3, registrations_per_address: 0 }\nlimits: { rpm: 0, tpm: 0 }\n${MODELS}`,
    {
      ...process.env,
      STRIPE_SECRET_KEY: SECRET_KEY,
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_BASE: stripeApi.url,
    },
  );
});

afterAll(async () => {
  await gw?.close();
  await stripeApi?.close();
});

const db = () => gw.app.db;
const balance = async (accountId: number) =>
  Number((await db()('accounts').where('id', accountId).first()).balance_micros);
const ledgerOf = (accountId: number) => db()('ledger').where('account_id', accountId).orderBy('id');
const client = () => new ConsoleClient(gw.url);
const v1 = (secret: string) => new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const chat = (secret: string) =>
  v1(secret).chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: 'hi' }] });
const errorOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return e as { status: number; code?: string };
  }
  throw new Error('expected a failure');
};

describe('registration', () => {
  test('registered and logged in with an HttpOnly SameSite cookie; the starter credits come with the mailed link, once', async () => {
    const c = client();
    const email = uniqueEmail('Reg');
    const r = await c.register(email.toUpperCase(), PASSWORD, undefined, { verify: false });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      account: {
        id: expect.any(Number),
        email: email.toLowerCase(),
        balance_usd: '0.000000',
        balance_micros: 0,
        referral_code: expect.stringMatching(/^[0-9A-Z]{8}$/),
        referral_link: `${gw.url}/console/register?ref=${r.body.account.referral_code}`,
        email_verified: false,
        low_balance_usd: null,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        totals: {
          spent_usd: '0.000000',
          requests: 0,
          topped_up_usd: '0.000000',
          referral_usd: '0.000000',
          credited_usd: '0.000000',
        },
      },
      csrf_token: expect.any(String),
    });
    expect(r.cookies).toHaveLength(1);
    expect(r.cookies[0]).toMatch(/^sy_session=[A-Za-z0-9_-]{43}; Max-Age=2592000; Path=\/; HttpOnly; SameSite=Lax$/);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(await ledgerOf(r.body.account.id)).toEqual([]); // nothing before the address is confirmed
    const token = mailedToken(gw.mails, email.toLowerCase(), '/console/verify')!;
    expect(gw.mails.at(-1)!.text).toContain(`${gw.url}/console/verify?token=${token}`);
    expect((await client().post('/console/api/verify-email', { token })).body).toEqual({
      email_verified: true,
      already_verified: false,
    });
    expect((await c.get('/console/api/account')).body).toMatchObject({ balance_usd: '1.000000', email_verified: true });
    const again = await client().post('/console/api/verify-email', { token }); // single use: opened again, it pays nothing
    expect(again).toMatchObject({ status: 200, body: { email_verified: true, already_verified: true } });
    const rows = await ledgerOf(r.body.account.id);
    expect(rows.map((x) => [x.kind, Number(x.amount_micros)])).toEqual([['signup', 1_000_000]]);
    expect(rows[0].ref).toMatch(/^signup_[0-9a-f]{40}$/); // per mailbox, not per account
    // The session works, and only the SHA-256 of its id is stored.
    expect((await c.get('/console/api/session')).body.account.email).toBe(email.toLowerCase());
    const id = c.cookie!.split('=')[1];
    expect(await db()('sessions').where('id_hash', id).first()).toBeUndefined();
    expect(await db()('sessions').where('account_id', r.body.account.id)).toHaveLength(1);
    // The password is stored as a salted scrypt hash with its parameters.
    const { password_hash } = await db()('accounts').where('id', r.body.account.id).first();
    expect(password_hash).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  });

  test('X-Forwarded-Proto from a client that is not a trusted proxy is not believed', async () => {
    const r = await client().call(
      'POST',
      '/console/api/register',
      { email: uniqueEmail(), password: PASSWORD },
      { headers: { 'x-forwarded-proto': 'https' } },
    );
    expect(r.status).toBe(201);
    expect(r.cookies[0]).toMatch(/; HttpOnly; SameSite=Lax$/);
    expect(r.body.account.referral_link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/console\/register\?ref=/);
  });

  test('a referral code gives 20 USD to both accounts once the new address is confirmed: 21 for the new one, +20 for the referrer, once', async () => {
    const referrer = await registered(gw.url);
    const before = await balance(referrer.account.id);
    const fresh = client();
    const r = await fresh.register(uniqueEmail(), PASSWORD, referrer.account.referral_code.toLowerCase());
    expect(r.status).toBe(201);
    expect(r.body.account).toMatchObject({
      balance_usd: '21.000000',
      email_verified: true,
      totals: { referral_usd: '20.000000', credited_usd: '21.000000' }, // credited: the starter credit and the referral
    });
    const newId = r.body.account.id;
    const rows = await ledgerOf(newId);
    expect(rows.map((x) => [x.kind, Number(x.amount_micros)])).toEqual([
      ['signup', 1_000_000],
      ['referral', 20_000_000],
    ]);
    const mailbox = rows[1].ref.slice('referral_'.length);
    expect(await balance(referrer.account.id)).toBe(before + 20_000_000);
    const mine = await referrer.get('/console/api/account');
    expect(mine.body).toMatchObject({ balance_usd: '21.000000', totals: { referral_usd: '20.000000' } });
    expect((await ledgerOf(referrer.account.id)).at(-1)).toMatchObject({
      kind: 'referral',
      ref: `referred_${mailbox}`,
    });
    // Once per mailbox: the ledger refuses a second referral row for it.
    await expect(
      post(db(), {
        accountId: referrer.account.id,
        kind: 'referral',
        amountMicros: 20_000_000,
        ref: `referred_${mailbox}`,
      }),
    ).rejects.toBeInstanceOf(DuplicateLedgerEntry);
    // A second referred account pays the referrer again (another new account).
    expect((await client().register(uniqueEmail(), PASSWORD, referrer.account.referral_code)).status).toBe(201);
    expect(await balance(referrer.account.id)).toBe(before + 40_000_000);
    expect((await verifyLedger(db())).problems).toEqual([]);
  });

  test('an unknown referral code is a 400 that names it, and creates nothing', async () => {
    const email = uniqueEmail();
    const r = await client().register(email, PASSWORD, 'NOPE2345');
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({
      message: 'Unknown referral code: NOPE2345',
      type: 'invalid_request_error',
      param: 'referral_code',
      code: 'invalid_referral_code',
    });
    expect(r.cookies).toEqual([]);
    expect(await db()('accounts').where('email', email)).toEqual([]);
    expect((await client().register(email)).status).toBe(201);
  });

  test('a duplicate email is a 409 email_taken, whatever its case', async () => {
    const email = uniqueEmail();
    expect((await client().register(email)).status).toBe(201);
    const r = await client().register(`  ${email.toUpperCase()} `.trim());
    expect(r.status).toBe(409);
    expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param: 'email', code: 'email_taken' });
    expect(await db()('accounts').where('email', email)).toHaveLength(1);
  });

  test.each([
    ['short', 'abc123!', /at least 10/],
    ['letters only', 'onlylettershere', /letters only/],
    ['digits only', '12345678901234', /digits only/],
    ['a common password', 'password123', /^Password is too easy to guess: This is a commonly used password/],
  ])('a weak password (%s) is a 400 naming the password', async (_what, password, message) => {
    const email = uniqueEmail();
    const r = await client().register(email, password);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      param: 'password',
      code: 'weak_password',
      message: expect.stringMatching(message),
    });
    expect(await db()('accounts').where('email', email)).toEqual([]);
  });

  test('a password equal to the email is weak', async () => {
    const email = uniqueEmail('a1');
    const r = await client().register(email, email.toUpperCase());
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ param: 'password', message: 'Password must not be the email address' });
  });

  test('the body is checked against the contract', async () => {
    const r = await client().post('/console/api/register', { email: 'not-an-email', password: PASSWORD });
    expect(r.status).toBe(400);
    expect(r.body.error.param).toBe('email');
    expect(
      (await client().post('/console/api/register', { email: uniqueEmail(), password: PASSWORD, admin: true })).status,
    ).toBe(400);
  });
});

describe('log-in and sessions', () => {
  test('log in, read the session, log out (the session is deleted on the server)', async () => {
    const email = uniqueEmail();
    await client().register(email);
    const c = client();
    const r = await c.login(email.toUpperCase());
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ account: { email, balance_usd: '1.000000' }, csrf_token: expect.any(String) });
    expect(r.cookies[0]).toMatch(/^sy_session=[\w-]{43}; Max-Age=2592000; Path=\/; HttpOnly; SameSite=Lax$/);
    const s = await c.get('/console/api/session');
    expect(s.status).toBe(200);
    expect(s.body.csrf_token).toBe(c.csrf);
    const cookie = c.cookie!;
    const out = await c.post('/console/api/logout');
    expect(out.status).toBe(204);
    expect(out.cookies[0]).toBe('sy_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax');
    // The old cookie no longer works anywhere.
    const stale = new ConsoleClient(gw.url);
    stale.cookie = cookie;
    const after = await stale.get('/console/api/session');
    expect(after.status).toBe(401);
    expect(after.body.error).toEqual({
      message: 'Not logged in',
      type: 'authentication_error',
      param: null,
      code: 'not_logged_in',
    });
  });

  test('a hash made with older scrypt parameters is upgraded at the next log-in', async () => {
    const email = uniqueEmail();
    const r = await client().register(email);
    const salt = crypto.randomBytes(16);
    const old = `scrypt$16384$8$1$${salt.toString('base64url')}$${crypto.scryptSync(PASSWORD, salt, 32, { N: 16384, r: 8, p: 1 }).toString('base64url')}`;
    await db()('accounts').where('id', r.body.account.id).update({ password_hash: old });
    expect((await client().login(email)).status).toBe(200);
    const { password_hash } = await db()('accounts').where('id', r.body.account.id).first();
    expect(password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect((await client().login(email)).status).toBe(200);
  });

  test('a wrong password and an unknown email get the same 401', async () => {
    const email = uniqueEmail();
    await client().register(email);
    const wrong = await client().login(email, 'wrong password 1');
    const unknown = await client().login(uniqueEmail(), PASSWORD);
    for (const r of [wrong, unknown]) {
      expect(r.status).toBe(401);
      expect(r.body.error).toEqual({
        message: 'Invalid email or password',
        type: 'authentication_error',
        param: null,
        code: 'invalid_credentials',
      });
      expect(r.cookies).toEqual([]);
    }
  });

  test('failed log-ins are limited per email: 429 with retry-after, even with the right password', async () => {
    const email = uniqueEmail();
    await client().register(email);
    // A success gives its point back: it does not count against the limit (3 per email here).
    expect((await client().login(email)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await client().login(email, `wrong password ${i}`)).status).toBe(401);
    const r = await client().login(email);
    expect(r.status).toBe(429);
    expect(r.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    // Other emails are not affected.
    const other = uniqueEmail();
    await client().register(other);
    expect((await client().login(other)).status).toBe(200);
  });

  test('parallel guesses cannot slip past the limit', async () => {
    const email = uniqueEmail();
    await client().register(email);
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => client().login(email, `guess number ${i}`)));
    expect(answers.filter((a) => a.status === 401)).toHaveLength(3);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(5);
  });

  test('failed log-ins are limited per client address too', async () => {
    const strict = await startGateway(
      `console: { login_attempts_per_address: 4, login_attempts_per_email: 100 }\n${MODELS}`,
    );
    try {
      const emails = [uniqueEmail(), uniqueEmail()];
      for (const e of emails) await new ConsoleClient(strict.url).register(e);
      for (let i = 0; i < 4; i++)
        expect((await new ConsoleClient(strict.url).login(emails[i % 2], `wrong password ${i}`)).status).toBe(401);
      const r = await new ConsoleClient(strict.url).login(emails[0]);
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await strict.close();
    }
  });

  test('registrations are limited per client address', async () => {
    const strict = await startGateway(`console: { registrations_per_address: 2 }\n${MODELS}`);
    try {
      expect((await new ConsoleClient(strict.url).register()).status).toBe(201);
      expect((await new ConsoleClient(strict.url).register()).status).toBe(201);
      const r = await new ConsoleClient(strict.url).register();
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await strict.close();
    }
  });

  test('not logged in: every console call but register and login is a 401 not_logged_in', async () => {
    const anon = client();
    for (const [method, path] of [
      ['GET', '/console/api/session'],
      ['GET', '/console/api/account'],
      ['GET', '/console/api/keys'],
      ['POST', '/console/api/keys'],
      ['PATCH', '/console/api/keys/1'],
      ['DELETE', '/console/api/keys/1'],
      ['GET', '/console/api/models'],
      ['POST', '/console/api/topup/redeem'],
      ['GET', '/console/api/topup/options'],
      ['POST', '/console/api/topup/checkout'],
      ['GET', '/console/api/usage'],
      ['GET', '/console/api/usage/daily'],
      ['GET', '/console/api/usage/refused'],
      ['GET', '/console/api/ledger'],
      ['POST', '/console/api/logout'],
    ]) {
      const r = await anon.call(method, path, method === 'GET' || method === 'DELETE' ? undefined : {});
      expect({ method, path, status: r.status, code: r.body.error.code }).toEqual({
        method,
        path,
        status: 401,
        code: 'not_logged_in',
      });
      expect(r.headers.get('x-request-id')).toMatch(/^req_/);
    }
    // A forged or malformed cookie is the same.
    anon.cookie = 'sy_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    expect((await anon.get('/console/api/account')).status).toBe(401);
    anon.cookie = 'sy_session=%%%; other="unterminated';
    expect((await anon.get('/console/api/account')).status).toBe(401);
  });

  test('an API key is not a console session', async () => {
    const { secret } = await gw.newKey();
    const r = await client().call('GET', '/console/api/account', undefined, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(r.status).toBe(401);
  });
});

describe('CSRF', () => {
  test('state-changing calls without the session CSRF token are a 403 csrf_failed, and change nothing', async () => {
    const c = await registered(gw.url);
    const created = await c.post('/console/api/keys', { name: 'k' });
    expect(created.status).toBe(201);
    const id = created.body.key.id;
    const other = await registered(gw.url);
    for (const csrf of [false, 'wrong-token', other.csrf!] as const) {
      for (const [method, path, body] of [
        ['POST', '/console/api/keys', { name: 'x' }],
        ['PATCH', `/console/api/keys/${id}`, { enabled: false }],
        ['DELETE', `/console/api/keys/${id}`, undefined],
        ['POST', '/console/api/topup/redeem', { code: 'SY-AAAAA-AAAAA-AAAAA-AAAAA' }],
        ['POST', '/console/api/topup/checkout', { amount_usd: '10' }],
        ['POST', '/console/api/logout', undefined],
      ] as const) {
        const r = await c.call(method, path, body, { csrf });
        expect({ method, path, status: r.status, error: r.body.error }).toEqual({
          method,
          path,
          status: 403,
          error: {
            message: 'Missing or invalid CSRF token',
            type: 'permission_error',
            param: null,
            code: 'csrf_failed',
          },
        });
      }
    }
    expect((await c.get('/console/api/keys')).body.data).toEqual([
      expect.objectContaining({ id, name: 'k', enabled: true }),
    ]);
    expect((await c.get('/console/api/session')).status).toBe(200);
  });

  test('reads need no CSRF token', async () => {
    const c = await registered(gw.url);
    c.csrf = null;
    expect((await c.get('/console/api/account')).status).toBe(200);
  });
});

describe('keys', () => {
  test('create (the secret once), list, use with /v1, rename, quota, models, scopes', async () => {
    const c = await registered(gw.url);
    const r = await c.post('/console/api/keys', {
      name: 'production',
      quota_usd: '5.5',
      models: ['mock-chat'],
      scopes: ['chat', 'models'],
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      key: {
        id: expect.any(Number),
        name: 'production',
        prefix: r.body.secret.slice(0, 9),
        enabled: true,
        quota_usd: '5.500000',
        used_usd: '0.000000',
        models: ['mock-chat'],
        scopes: ['chat', 'models'],
        created_at: expect.any(String),
        last_used_at: null,
        expires_at: null,
        budget: null,
      },
      secret: expect.stringMatching(/^sk-[A-Za-z0-9]{48}$/),
    });
    const { key, secret } = r.body;
    const list = await c.get('/console/api/keys');
    expect(list.body).toEqual({ data: [key] });
    expect(JSON.stringify(list.body)).not.toContain(secret);
    // The key works against /v1 within its model list and scopes.
    expect((await chat(secret)).choices[0].message.content).toContain('hi');
    expect((await v1(secret).models.list()).data.map((m) => m.id)).toEqual(['mock-chat']);
    expect((await errorOf(v1(secret).embeddings.create({ model: 'mock-embedding', input: 'x' }))).status).toBe(403);
    // Change it.
    const changed = await c.patch(`/console/api/keys/${key.id}`, {
      name: 'renamed',
      quota_usd: null,
      models: null,
      scopes: ['embeddings'],
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      id: key.id,
      name: 'renamed',
      quota_usd: null,
      models: null,
      scopes: ['embeddings'],
      enabled: true,
    });
    expect((await v1(secret).embeddings.create({ model: 'mock-embedding', input: 'x' })).data).toHaveLength(1);
    expect((await errorOf(chat(secret))).status).toBe(403);
    // Only the fields given change; the usage shows in used_usd.
    const again = await c.patch(`/console/api/keys/${key.id}`, { quota_usd: 2 });
    expect(again.body).toMatchObject({ name: 'renamed', quota_usd: '2.000000', scopes: ['embeddings'] });
    expect(Number(again.body.used_usd)).toBeGreaterThan(0);
    expect(again.body.last_used_at).toEqual(expect.any(String));
  });

  test('defaults: no name, no quota, every model, every scope', async () => {
    const c = await registered(gw.url);
    const r = await c.post('/console/api/keys', {});
    expect(r.body.key).toMatchObject({
      name: null,
      quota_usd: null,
      models: null,
      scopes: [...SCOPES], // every scope there is
    });
  });

  test('bad settings are 400s naming the field', async () => {
    const c = await registered(gw.url);
    const cases: [unknown, string][] = [
      [{ models: ['no-such-model'] }, 'models'],
      [{ models: [] }, 'models'],
      [{ quota_usd: '1.2345678' }, 'quota_usd'],
      [{ quota_usd: 'lots' }, 'quota_usd'],
      [{ quota_usd: -1 }, 'quota_usd'],
      [{ scopes: ['admin'] }, 'scopes[0]'],
      [{ scopes: [] }, 'scopes'],
      [{ name: 'x'.repeat(201) }, 'name'],
    ];
    for (const [body, param] of cases) {
      const r = await c.post('/console/api/keys', body);
      expect({ body, status: r.status, param: r.body.error.param }).toEqual({ body, status: 400, param });
    }
    expect((await c.get('/console/api/keys')).body.data).toEqual([]);
    const { body: k } = await c.post('/console/api/keys', {});
    expect((await c.patch(`/console/api/keys/${k.key.id}`, { enabled: 'no' })).status).toBe(400);
    expect((await c.patch(`/console/api/keys/abc`, { enabled: false })).status).toBe(400);
  });

  test('disabling a key in the console makes /v1 refuse it on the next request; enabling brings it back', async () => {
    const c = await registered(gw.url);
    const { body } = await c.post('/console/api/keys', { name: 'toggle' });
    await chat(body.secret);
    expect((await c.patch(`/console/api/keys/${body.key.id}`, { enabled: false })).body.enabled).toBe(false);
    const refused = await errorOf(chat(body.secret));
    expect(refused).toMatchObject({ status: 401, code: 'invalid_api_key' });
    await c.patch(`/console/api/keys/${body.key.id}`, { enabled: true });
    expect((await chat(body.secret)).choices).toHaveLength(1);
  });

  test('deleting a key makes /v1 refuse it on the next request; its usage stays', async () => {
    const c = await registered(gw.url);
    const { body } = await c.post('/console/api/keys', { name: 'doomed' });
    await chat(body.secret);
    const r = await c.del(`/console/api/keys/${body.key.id}`);
    expect(r.status).toBe(204);
    expect(await errorOf(chat(body.secret))).toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect((await c.get('/console/api/keys')).body.data).toEqual([]);
    expect((await c.del(`/console/api/keys/${body.key.id}`)).status).toBe(404);
    const usage = await c.get(`/console/api/usage?key_id=${body.key.id}`);
    expect(usage.body.data).toHaveLength(1);
    expect((await verifyLedger(db())).problems).toEqual([]);
  });

  test('a key deleted while its request is running: the request is settled and charged, nothing is left held', async () => {
    const c = await registered(gw.url);
    const { body } = await c.post('/console/api/keys', { name: 'in flight', quota_usd: '1' });
    const running = v1(body.secret).chat.completions.create({
      model: 'slow-chat',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    await new Promise((r) => setTimeout(r, 150)); // admitted (on a credit lease of the key), waiting for the slow upstream
    expect((await db()('leases').where('key_id', body.key.id)).length).toBe(1);
    expect((await c.del(`/console/api/keys/${body.key.id}`)).status).toBe(204);
    let text = '';
    for await (const chunk of await running) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toContain('hi');
    await gw.settled();
    expect(await db()('holds').where('key_id', body.key.id)).toEqual([]);
    expect(await db()('leases').where('key_id', body.key.id)).toEqual([]);
    expect(Number((await db()('accounts').where('id', c.account.id).first()).held_micros)).toBe(0);
    const usage = await c.get('/console/api/usage');
    expect(usage.body.data).toEqual([
      expect.objectContaining({ key_id: body.key.id, model: 'slow-chat', status: 200 }),
    ]);
    expect(await balance(c.account.id)).toBe(1_000_000 - Math.round(Number(usage.body.data[0].cost_usd) * 1e6));
    expect((await verifyLedger(db())).problems).toEqual([]);
  });

  test("another account's key: 404 on change and delete, invisible in lists and usage", async () => {
    const owner = await registered(gw.url);
    const intruder = await registered(gw.url);
    const { body } = await owner.post('/console/api/keys', { name: 'mine' });
    await chat(body.secret);
    const id = body.key.id;
    for (const r of [
      await intruder.patch(`/console/api/keys/${id}`, { enabled: false, name: 'pwned' }),
      await intruder.del(`/console/api/keys/${id}`),
    ]) {
      expect(r.status).toBe(404);
      expect(r.body.error).toEqual({
        message: `No such API key: ${id}`,
        type: 'invalid_request_error',
        param: 'id',
        code: 'key_not_found',
      });
    }
    expect((await intruder.get('/console/api/keys')).body.data).toEqual([]);
    const usage = await intruder.get(`/console/api/usage?key_id=${id}`);
    expect(usage.body).toMatchObject({ data: [], next_cursor: null, totals: [] });
    expect((await intruder.get('/console/api/ledger')).body.data.map((r: any) => r.kind)).toEqual(['signup']);
    // Untouched, and still working.
    expect((await owner.get('/console/api/keys')).body.data).toEqual([
      expect.objectContaining({ id, name: 'mine', enabled: true }),
    ]);
    expect((await chat(body.secret)).choices).toHaveLength(1);
    // A key that does not exist at all looks the same.
    expect((await intruder.patch('/console/api/keys/987654321', { name: 'x' })).status).toBe(404);
  });

  test('models and prices, each class in its own unit', async () => {
    const c = await registered(gw.url);
    const r = await c.get('/console/api/models');
    expect(schemaProblems('ConsoleModelList', r.body)).toBeNull();
    const base = { owned_by: 'switchyard', grade_prices: {} };
    const none = { input_usd_per_million: '0.000000', output_usd_per_million: '0.000000' };
    expect(r.body.data).toEqual([
      {
        ...base,
        id: 'mock-chat',
        kind: 'chat',
        input_usd_per_million: '1.500000',
        output_usd_per_million: '2.000000',
        // the mock provider bills no cache class apart: its cache prices are the input price (config/load.ts)
        prices: {
          prompt: '1.500000',
          cached: '1.500000',
          cache_write: '1.500000',
          cache_write_1h: '1.500000',
          completion: '2.000000',
        },
      },
      {
        ...base,
        id: 'mock-embedding',
        kind: 'embedding',
        input_usd_per_million: '0.020000',
        output_usd_per_million: '0.000000',
        prices: expect.objectContaining({ prompt: '0.020000' }),
      },
      {
        ...base,
        id: 'slow-chat',
        kind: 'chat',
        input_usd_per_million: '1.000000',
        output_usd_per_million: '1.000000',
        prices: expect.objectContaining({ prompt: '1.000000', completion: '1.000000' }),
      },
      // A speech model priced per character, a free moderation model, a reranker priced by tokens and searches:
      // only what they are priced for, by class name.
      { ...base, ...none, id: 'mock-tts', kind: 'speech', prices: { characters: '15.000000' } },
      { ...base, ...none, id: 'mock-moderation', kind: 'moderation', prices: {} },
      {
        ...base,
        id: 'mock-rerank',
        kind: 'rerank',
        input_usd_per_million: '0.020000',
        output_usd_per_million: '0.000000',
        prices: expect.objectContaining({ prompt: '0.020000', search_unit: '2000.000000' }),
      },
    ]);
    expect(r.body.data[1].prices).not.toHaveProperty('completion');
    expect(r.body.data[5].prices).not.toHaveProperty('completion');
    // the classes the prices are keyed by, as the usage page describes them
    expect(r.body.classes).toEqual((await c.get('/console/api/usage')).body.classes);
    expect(r.body.classes).toContainEqual({ name: 'characters', label: 'input', unit: 'character', part_of: null });
  });
});

describe('redemption codes', () => {
  test('a code credits its amount once; again is a 409, an unknown one a 400', async () => {
    const c = await registered(gw.url);
    const [code] = await createCodes(db(), 1, 12_500_000);
    expect(code.code).toMatch(/^SY(-[0-9A-Z]{5}){4}$/);
    const r = await c.post('/console/api/topup/redeem', { code: ` ${code.code.toLowerCase().replace(/-/g, '')} ` });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ amount_usd: '12.500000', balance_usd: '13.500000' });
    expect((await ledgerOf(c.account.id)).at(-1)).toMatchObject({ kind: 'redemption', ref: String(code.id) });
    const again = await c.post('/console/api/topup/redeem', { code: code.code });
    expect(again.status).toBe(409);
    expect(again.body.error).toEqual({
      message: 'This code has already been redeemed',
      type: 'invalid_request_error',
      param: 'code',
      code: 'code_redeemed',
    });
    const other = await registered(gw.url);
    expect((await other.post('/console/api/topup/redeem', { code: code.code })).status).toBe(409);
    for (const bad of ['SY-AAAAA-AAAAA-AAAAA-AAAAA', 'hello']) {
      const r2 = await c.post('/console/api/topup/redeem', { code: bad });
      expect(r2.status).toBe(400);
      expect(r2.body.error).toMatchObject({ param: 'code', code: 'invalid_code' });
    }
    expect((await c.get('/console/api/account')).body).toMatchObject({
      balance_usd: '13.500000',
      totals: { topped_up_usd: '12.500000' },
    });
    // Only the hash of a code is stored.
    const row = await db()('redemption_codes').where('id', code.id).first();
    expect(JSON.stringify(row)).not.toContain(code.code.slice(3, 14));
    expect(row).toMatchObject({ redeemed_by: c.account.id });
  });

  test('two concurrent redemptions of one code: exactly one succeeds, one ledger row', async () => {
    for (let round = 0; round < 3; round++) {
      const [a, b] = await Promise.all([registered(gw.url), registered(gw.url)]);
      const [code] = await createCodes(db(), 1, 3_000_000);
      const answers = await Promise.all([a, b, a].map((c) => c.post('/console/api/topup/redeem', { code: code.code })));
      expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409]);
      expect(await db()('ledger').where({ kind: 'redemption', ref: String(code.id) })).toHaveLength(1);
      expect((await balance(a.account.id)) + (await balance(b.account.id))).toBe(2_000_000 + 3_000_000);
    }
    expect((await verifyLedger(db())).problems).toEqual([]);
  });
});

describe('card top-ups (Stripe)', () => {
  const sign = (payload: string, secret = WEBHOOK_SECRET) =>
    signer.webhooks.generateTestHeaderString({ payload, secret });
  const deliver = (event: unknown, signature?: string) => {
    const payload = JSON.stringify(event);
    return fetch(`${gw.url}/console/api/stripe/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature ?? sign(payload) },
      body: payload,
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
  };

  async function checkout(c: ConsoleClient, amount: string | number = '25.00') {
    const r = await c.post('/console/api/topup/checkout', { amount_usd: amount });
    expect(r.status).toBe(200);
    return { ...r.body, session: stripeApi.sessions.get(r.body.id)! };
  }

  test('options: card payments on, with their bounds', async () => {
    const c = await registered(gw.url);
    expect((await c.get('/console/api/topup/options')).body).toEqual({
      card: true,
      min_usd: '5.000000',
      max_usd: '1000.000000',
      currency: 'usd',
    });
  });

  test('checkout creates a Stripe Checkout Session with the library, for exactly that amount', async () => {
    const c = await registered(gw.url);
    const calls = stripeApi.calls.length;
    const r = await c.post('/console/api/topup/checkout', { amount_usd: '25.00' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^cs_test_/),
      url: expect.stringMatching(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_/),
    });
    expect(stripeApi.calls).toHaveLength(calls + 1);
    const call = stripeApi.calls.at(-1)!;
    expect(call).toMatchObject({ method: 'POST', path: '/v1/checkout/sessions' });
    expect(call.headers.authorization).toBe(`Bearer ${SECRET_KEY}`);
    expect(call.headers['user-agent']).toMatch(/^Stripe\/v1 NodeBindings/);
    expect(call.form).toMatchObject({
      mode: 'payment',
      'line_items[0][quantity]': '1',
      'line_items[0][price_data][currency]': 'usd',
      'line_items[0][price_data][unit_amount]': '2500',
      'metadata[account_id]': String(c.account.id),
      client_reference_id: String(c.account.id),
      customer_email: c.email,
      success_url: `${gw.url}/console/topup?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${gw.url}/console/topup?checkout=cancelled`,
    });
    // Nothing is credited until Stripe reports the payment.
    expect(await balance(c.account.id)).toBe(1_000_000);
  });

  test('amounts outside the bounds or with fractions of cents are 400s; Stripe failing is a 502', async () => {
    const c = await registered(gw.url);
    for (const amount of ['4.99', '1000.01', '10.005', 'ten', -5]) {
      const r = await c.post('/console/api/topup/checkout', { amount_usd: amount });
      expect({ amount, status: r.status, param: r.body.error.param }).toEqual({
        amount,
        status: 400,
        param: 'amount_usd',
      });
    }
    expect((await c.post('/console/api/topup/checkout', { amount_usd: 5 })).status).toBe(200);
    stripeApi.failNext = 2; // the library retries once
    const r = await c.post('/console/api/topup/checkout', { amount_usd: '10' });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ type: 'upstream_error', code: 'payment_provider_unavailable' });
    expect(JSON.stringify(r.body)).not.toContain(SECRET_KEY);
  });

  test('a signed checkout.session.completed credits the amount once, however often it is delivered', async () => {
    const c = await registered(gw.url);
    const { session } = await checkout(c, '25.00');
    const event = checkoutEvent(session);
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push(await deliver(event));
    expect(outcomes).toEqual([
      { status: 200, body: { received: true, outcome: 'credited' } },
      { status: 200, body: { received: true, outcome: 'duplicate' } },
      { status: 200, body: { received: true, outcome: 'duplicate' } },
    ]);
    // Another event for the same session (the async success) does not pay twice either; nor do concurrent deliveries.
    const more = await Promise.all([
      deliver(checkoutEvent(session, { type: 'checkout.session.async_payment_succeeded' })),
      deliver(checkoutEvent(session)),
      deliver(checkoutEvent(session)),
    ]);
    expect(more.map((m) => m.body.outcome)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(await balance(c.account.id)).toBe(26_000_000);
    const rows = await db()('ledger').where({ account_id: c.account.id, kind: 'topup' });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ ref: session.id });
    expect(Number(rows[0].amount_micros)).toBe(25_000_000);
    expect((await c.get('/console/api/account')).body.totals.topped_up_usd).toBe('25.000000');
  });

  test('whatever the order: the async success first, then the completion, credits once', async () => {
    const c = await registered(gw.url);
    const { session } = await checkout(c, 7.5);
    expect(
      (await deliver(checkoutEvent(session, { type: 'checkout.session.completed', paid: false }))).body.outcome,
    ).toBe('ignored');
    expect(
      (await deliver(checkoutEvent(session, { type: 'checkout.session.async_payment_succeeded' }))).body.outcome,
    ).toBe('credited');
    expect((await deliver(checkoutEvent(session))).body.outcome).toBe('duplicate');
    expect(await balance(c.account.id)).toBe(8_500_000);
  });

  test('a bad signature is a 400 and credits nothing', async () => {
    const c = await registered(gw.url);
    const { session } = await checkout(c, '30');
    const event = checkoutEvent(session);
    const payload = JSON.stringify(event);
    const tampered = JSON.stringify({
      ...event,
      data: { object: { ...(event.data as any).object, amount_total: 999_999 } },
    });
    const attempts = [
      await deliver(event, sign(payload, 'whsec_wrong_secret')),
      await deliver(JSON.parse(tampered), sign(payload)), // signed for other bytes
      await deliver(event, 't=1,v1=00'),
      await deliver(
        event,
        signer.webhooks.generateTestHeaderString({
          payload,
          secret: WEBHOOK_SECRET,
          timestamp: Math.floor(Date.now() / 1000) - 3600,
        }),
      ), // too old
    ];
    for (const a of attempts) {
      expect(a.status).toBe(400);
      expect(a.body.error).toMatchObject({
        type: 'invalid_request_error',
        code: 'invalid_signature',
        param: 'stripe-signature',
      });
    }
    const unsigned = await fetch(`${gw.url}/console/api/stripe/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: payload,
    });
    expect(unsigned.status).toBe(400);
    expect(await balance(c.account.id)).toBe(1_000_000);
    expect(await db()('ledger').where({ account_id: c.account.id, kind: 'topup' })).toEqual([]);
    // The genuine delivery still works afterwards.
    expect((await deliver(event)).body.outcome).toBe('credited');
    expect(await balance(c.account.id)).toBe(31_000_000);
  });

  test('other events are acknowledged and ignored; the signature is checked over the raw bytes', async () => {
    const c = await registered(gw.url);
    const { session } = await checkout(c, '10');
    expect(
      await deliver({
        id: 'evt_other',
        object: 'event',
        type: 'payment_intent.created',
        data: { object: { id: 'pi_1' } },
      }),
    ).toEqual({
      status: 200,
      body: { received: true, outcome: 'ignored' },
    });
    expect((await deliver(checkoutEvent(session, { type: 'checkout.session.expired' }))).body.outcome).toBe('ignored');
    // Whitespace and key order that a re-serialisation would change: verified as sent.
    const payload = JSON.stringify(checkoutEvent(session), null, 3);
    const r = await fetch(`${gw.url}/console/api/stripe/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': sign(payload) },
      body: payload,
    });
    expect(await r.json()).toEqual({ received: true, outcome: 'credited' });
    expect(await balance(c.account.id)).toBe(11_000_000);
  });

  test('without Stripe keys the card option is off: options say so, checkout and webhook are 404', async () => {
    const plain = await startGateway(MODELS, { ...process.env, STRIPE_SECRET_KEY: '', STRIPE_WEBHOOK_SECRET: '' });
    try {
      const c = await registered(plain.url);
      expect((await c.get('/console/api/topup/options')).body.card).toBe(false);
      const r = await c.post('/console/api/topup/checkout', { amount_usd: '10' });
      expect(r.status).toBe(404);
      expect(r.body.error).toEqual({
        message: 'card payments are not configured',
        type: 'invalid_request_error',
        param: null,
        code: 'card_payments_not_configured',
      });
      const payload = JSON.stringify({ id: 'evt_1', type: 'checkout.session.completed', data: { object: {} } });
      const hook = await fetch(`${plain.url}/console/api/stripe/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': sign(payload) },
        body: payload,
      });
      expect(hook.status).toBe(404);
    } finally {
      await plain.close();
    }
  });
});

describe('usage, daily usage and ledger', () => {
  let c: ConsoleClient;
  let keys: { id: number; secret: string }[];

  beforeAll(async () => {
    c = await registered(gw.url);
    keys = [];
    for (const name of ['a', 'b']) {
      const { body } = await c.post('/console/api/keys', { name });
      keys.push({ id: body.key.id, secret: body.secret });
    }
    await chat(keys[0].secret);
    await chat(keys[0].secret);
    await chat(keys[1].secret);
    await v1(keys[1].secret).embeddings.create({ model: 'mock-embedding', input: 'hello' });
    await gw.settled(); // settlements are written in batches
  });

  test('records newest first, with per-model totals', async () => {
    const r = await c.get('/console/api/usage');
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(4);
    expect(r.body.data[0]).toEqual({
      request_id: expect.stringMatching(/^req_/),
      key_id: keys[1].id,
      model: 'mock-embedding',
      status: 200,
      prompt_tokens: expect.any(Number),
      completion_tokens: 0,
      cached_tokens: 0,
      cache_write_tokens: 0,
      cache_write_1h_tokens: 0,
      reasoning_tokens: 0,
      usage: {
        prompt: r.body.data[0].prompt_tokens,
        cached: 0,
        cache_write: 0,
        cache_write_1h: 0,
        completion: 0,
        reasoning: 0,
        images: 0,
        characters: 0,
        audio_seconds: 0,
        moderation: 0,
        search_unit: 0,
      },
      counted: expect.stringMatching(/^(upstream|tokenizer)$/),
      cost_usd: expect.stringMatching(/^\d+\.\d{6}$/),
      latency_ms: expect.any(Number),
      created_at: expect.any(String),
    });
    expect(r.body.next_cursor).toBeNull();
    expect(r.body.totals).toEqual([
      {
        model: 'mock-chat',
        requests: 3,
        prompt_tokens: expect.any(Number),
        completion_tokens: expect.any(Number),
        cached_tokens: 0,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
        usage: expect.any(Object),
        cost_usd: expect.any(String),
      },
      {
        model: 'mock-embedding',
        requests: 1,
        prompt_tokens: expect.any(Number),
        completion_tokens: 0,
        cached_tokens: 0,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
        usage: expect.any(Object),
        cost_usd: expect.any(String),
      },
    ]);
    // Every class by name in the `usage` maps, as the page's `classes` describe them: the fields older clients read agree.
    expect(schemaProblems('UsagePage', r.body)).toBeNull();
    const chat = r.body.totals[0];
    expect(chat.usage).toEqual({
      prompt: chat.prompt_tokens,
      cached: 0,
      cache_write: 0,
      cache_write_1h: 0,
      completion: chat.completion_tokens,
      reasoning: 0,
      images: 0,
      characters: 0,
      audio_seconds: 0,
      moderation: 0,
      search_unit: 0,
    });
    expect(r.body.classes).toEqual([
      { name: 'prompt', label: 'input', unit: 'token', part_of: null },
      { name: 'cached', label: 'cached', unit: 'token', part_of: 'prompt' },
      { name: 'cache_write', label: 'cache write', unit: 'token', part_of: 'prompt' },
      { name: 'cache_write_1h', label: '1-hour cache write', unit: 'token', part_of: 'cache_write' },
      { name: 'completion', label: 'output', unit: 'token', part_of: null },
      { name: 'reasoning', label: 'reasoning', unit: 'token', part_of: 'completion' },
      { name: 'images', label: 'generated', unit: 'image', part_of: null },
      { name: 'characters', label: 'input', unit: 'character', part_of: null },
      { name: 'audio_seconds', label: 'audio', unit: 'second', part_of: null },
      { name: 'moderation', label: 'moderation', unit: 'request', part_of: null },
      { name: 'search_unit', label: 'rerank', unit: 'search_unit', part_of: null },
    ]);
    const spent = (await c.get('/console/api/account')).body.totals;
    const sum = r.body.data.reduce((a: number, x: any) => a + Math.round(Number(x.cost_usd) * 1e6), 0);
    expect(Math.round(Number(spent.spent_usd) * 1e6)).toBe(sum);
    expect(spent.requests).toBe(4);
  });

  test('pages with limit and cursor; totals cover the whole filtered range', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = (await c.get(`/console/api/usage?limit=3${cursor ? `&cursor=${cursor}` : ''}`)).body;
      expect(page.totals.reduce((a: number, t: any) => a + t.requests, 0)).toBe(4);
      seen.push(...page.data.map((x: any) => x.request_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(4);
    expect(new Set(seen).size).toBe(4);
  });

  test('filters by key and by time; bad filters are 400s', async () => {
    const byKey = (await c.get(`/console/api/usage?key_id=${keys[0].id}`)).body;
    expect(byKey.data.map((x: any) => x.key_id)).toEqual([keys[0].id, keys[0].id]);
    expect(byKey.totals).toEqual([expect.objectContaining({ model: 'mock-chat', requests: 2 })]);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    expect((await c.get(`/console/api/usage?from=${tomorrow}`)).body).toMatchObject({
      data: [],
      next_cursor: null,
      totals: [],
    });
    expect((await c.get(`/console/api/usage?to=${tomorrow}`)).body.data).toHaveLength(4);
    expect((await c.get(`/console/api/usage?from=2000-01-01T00:00:00Z&to=2000-01-02`)).body.data).toEqual([]);
    for (const q of ['from=yesterday', 'to=2026-13-45', 'limit=0', 'limit=501', 'cursor=abc', 'key_id=x']) {
      const r = await c.get(`/console/api/usage?${q}`);
      expect({ q, status: r.status }).toEqual({ q, status: 400 });
      expect(r.body.error.param).toBe(q.split('=')[0]);
    }
  });

  test('daily: every day present, zeros included, today counted', async () => {
    const r = await c.get('/console/api/usage/daily?days=3');
    expect(r.status).toBe(200);
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
    expect(schemaProblems('DailyUsage', r.body)).toBeNull();
    expect(r.body.data.map((d: any) => d.date)).toEqual([day(2), day(1), day(0)]);
    const page = (await c.get('/console/api/usage')).body;
    expect(r.body.classes).toEqual(page.classes);
    // Every class, by name: none on the days without requests, today's the sum of its records'.
    const zeros = Object.fromEntries(page.classes.map((k: any) => [k.name, 0]));
    expect(r.body.data.slice(0, 2)).toEqual([
      { date: day(2), requests: 0, cost_usd: '0.000000', usage: zeros, refused: 0 },
      { date: day(1), requests: 0, cost_usd: '0.000000', usage: zeros, refused: 0 },
    ]);
    expect(r.body.data[2].requests).toBe(4);
    const summed = { ...zeros };
    for (const rec of page.data) for (const [name, n] of Object.entries(rec.usage)) summed[name] += n as number;
    expect(summed.prompt).toBeGreaterThan(0);
    expect(summed.completion).toBeGreaterThan(0);
    expect(r.body.data[2].usage).toEqual(summed);
    expect((await c.get('/console/api/usage/daily')).body.data).toHaveLength(14);
    expect((await c.get('/console/api/usage/daily?days=0')).status).toBe(400);
    // Another account sees nothing of this.
    const other = await registered(gw.url);
    expect((await other.get('/console/api/usage/daily?days=1')).body.data).toEqual([
      { date: day(0), requests: 0, cost_usd: '0.000000', usage: zeros, refused: 0 },
    ]);
  });

  test('ledger: newest first, paged, the balance after each row', async () => {
    const all = (await c.get('/console/api/ledger')).body;
    expect(all.data.map((r: any) => r.kind)).toEqual(['usage', 'usage', 'usage', 'usage', 'signup']);
    expect(all.data[4]).toEqual({
      id: expect.any(Number),
      kind: 'signup',
      amount_usd: '1.000000',
      balance_after_usd: '1.000000',
      ref: expect.stringMatching(/^signup_[0-9a-f]{40}$/),
      model: null,
      created_at: expect.any(String),
    });
    expect(all.data[0]).toMatchObject({ model: 'mock-embedding', ref: expect.stringMatching(/^req_/) });
    expect(all.data[0].balance_after_usd).toBe((await c.get('/console/api/account')).body.balance_usd);
    const first = (await c.get('/console/api/ledger?limit=2')).body;
    expect(first.data.map((r: any) => r.id)).toEqual(all.data.slice(0, 2).map((r: any) => r.id));
    const second = (await c.get(`/console/api/ledger?limit=2&cursor=${first.next_cursor}`)).body;
    expect(second.data.map((r: any) => r.id)).toEqual(all.data.slice(2, 4).map((r: any) => r.id));
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    expect((await c.get(`/console/api/ledger?from=${tomorrow}`)).body).toEqual({ data: [], next_cursor: null });
  });
});

test('the contract: unknown console paths are 404, wrong methods 405, in the error shape', async () => {
  const c = await registered(gw.url);
  const r = await c.get('/console/api/nope');
  expect(r.status).toBe(404);
  expect(r.body.error.code).toBe('unknown_url');
  expect((await c.call('PUT', '/console/api/keys', {})).status).toBe(405);
  expect((await c.get('/console/api/stripe/webhook')).status).toBe(405);
});
