/**
 * The admin API (`/admin/api`, bearer ADMIN_TOKEN) and the same operations in the CLI: listing accounts, granting and
 * removing credits, redemption codes in batches, disabling an account (its keys are refused at once). Runs on
 * DATABASE_URL (SQLite, then MariaDB and PostgreSQL).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/app';
import { ConsoleClient, PASSWORD, registered, uniqueEmail } from '../helpers/console';
import { closeLease, openLease } from '../../src/billing/store';
import { verifyLedger } from '../../src/billing/verify';

const TOKEN = 'admin-token-for-tests-0123456789';
const CONFIG = `
limits: { rpm: 0, tpm: 0 }
console: { registrations_per_address: 0 }
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

const db = () => gw.app.db;

async function admin(
  method: string,
  path: string,
  body?: unknown,
  token: string | null = TOKEN,
  base = gw.url,
  extra: Record<string, string> = {},
) {
  const headers: Record<string, string> = { ...extra };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as any, headers: r.headers };
}

const chat = (secret: string) =>
  new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 }).chat.completions.create({
    model: 'mock-chat',
    messages: [{ role: 'user', content: 'hi' }],
  });

describe('the admin token', () => {
  test('is required on every admin operation: none or a wrong one is a 401', async () => {
    const ops: [string, string, unknown?][] = [
      ['GET', '/admin/api/accounts'],
      ['POST', '/admin/api/accounts/1/credits', { usd: '1' }],
      ['POST', '/admin/api/accounts/1/disable'],
      ['POST', '/admin/api/accounts/1/enable'],
      ['POST', '/admin/api/redemption-codes', { count: 1, usd: '1' }],
    ];
    for (const [method, path, body] of ops) {
      for (const token of [null, 'wrong-token', `${TOKEN}x`]) {
        const r = await admin(method, path, body, token);
        expect({ path, token, status: r.status, error: r.body.error }).toEqual({
          path,
          token,
          status: 401,
          error: {
            message: 'Invalid admin token',
            type: 'authentication_error',
            param: null,
            code: 'invalid_admin_token',
          },
        });
      }
    }
    // Nothing was done.
    expect(await db()('redemption_codes').where('amount_micros', 1_000_000).andWhere('note', 'never')).toEqual([]);
  });

  test('an API key or a console session is not an admin token', async () => {
    const { secret } = await gw.newKey();
    expect((await admin('GET', '/admin/api/accounts', undefined, secret)).status).toBe(401);
    const c = await registered(gw.url);
    expect((await c.get('/admin/api/accounts')).status).toBe(401);
  });

  test('without ADMIN_TOKEN the admin API is off: 404 to everything, whatever token is sent', async () => {
    const off = await startGateway(CONFIG, { ...process.env, ADMIN_TOKEN: '' });
    try {
      for (const token of [null, TOKEN, '']) {
        const r = await admin('GET', '/admin/api/accounts', undefined, token, off.url);
        expect(r.status).toBe(404);
        expect(r.body.error.code).toBe('unknown_url');
        expect(
          (await admin('POST', '/admin/api/redemption-codes', { count: 1, usd: '5' }, token, off.url)).status,
        ).toBe(404);
      }
    } finally {
      await off.close();
    }
  });
});

describe('accounts', () => {
  test('list: id order, paged, filtered by part of the email', async () => {
    const tag = `adm${Date.now()}`;
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) ids.push((await registered(gw.url).then((c) => c)).account.id);
    // Give them findable emails.
    for (const [i, id] of ids.entries())
      await db()('accounts')
        .where('id', id)
        .update({ email: `${tag}-${i}@example.com` });
    const all = await admin('GET', `/admin/api/accounts?email=${tag}`);
    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      data: ids.map((id, i) => ({
        id,
        email: `${tag}-${i}@example.com`,
        status: 'active',
        balance_usd: '1.000000',
        balance_micros: 1_000_000,
        referral_code: expect.any(String),
        debt_usd: '0.000000',
        created_at: expect.any(String),
      })),
      next_cursor: null,
    });
    const first = await admin('GET', `/admin/api/accounts?email=${tag}&limit=2`);
    expect(first.body.data.map((a: any) => a.id)).toEqual(ids.slice(0, 2));
    const second = await admin('GET', `/admin/api/accounts?email=${tag}&limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body).toEqual({ data: [expect.objectContaining({ id: ids[2] })], next_cursor: null });
    // LIKE wildcards in the filter are taken literally.
    expect((await admin('GET', `/admin/api/accounts?email=${encodeURIComponent('%')}`)).body.data).toEqual([]);
  });

  test('credits: a grant adds, an adjustment removes, never below zero', async () => {
    const c = await registered(gw.url);
    const id = c.account.id;
    const grant = await admin('POST', `/admin/api/accounts/${id}/credits`, { usd: '10.5', note: 'goodwill' });
    expect(grant.status).toBe(200);
    expect(grant.body).toEqual({
      account_id: id,
      kind: 'grant',
      amount_usd: '10.500000',
      balance_usd: '11.500000',
      ledger_id: expect.any(Number),
    });
    const adj = await admin('POST', `/admin/api/accounts/${id}/credits`, { usd: -1.5 });
    expect(adj.body).toMatchObject({ kind: 'adjustment', amount_usd: '-1.500000', balance_usd: '10.000000' });
    const tooMuch = await admin('POST', `/admin/api/accounts/${id}/credits`, { usd: '-10.000001' });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body.error).toMatchObject({ param: 'usd', code: 'insufficient_balance' });
    const rows = await db()('ledger').where('account_id', id).orderBy('id');
    expect(rows.map((r) => [r.kind, Number(r.amount_micros), r.note])).toEqual([
      ['signup', 1_000_000, null],
      ['grant', 10_500_000, 'goodwill'],
      ['adjustment', -1_500_000, null],
    ]);
    // The owner sees both rows in the console ledger.
    expect((await c.get('/console/api/ledger')).body.data.map((r: any) => r.kind)).toEqual([
      'adjustment',
      'grant',
      'signup',
    ]);
    for (const usd of ['0', 'abc', '1.0000001'])
      expect((await admin('POST', `/admin/api/accounts/${id}/credits`, { usd })).status).toBe(400);
    const missing = await admin('POST', '/admin/api/accounts/987654321/credits', { usd: '1' });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toEqual({
      message: 'No such account: 987654321',
      type: 'invalid_request_error',
      param: 'id',
      code: 'account_not_found',
    });
  });

  test('an adjustment never takes what requests in flight hold (the balance would go below zero when they settle)', async () => {
    const { accountId, keyId } = await gw.newKey({}, 10_000_000);
    const lease = `lease_admin_${accountId}`;
    expect(
      await openLease(db(), {
        id: lease,
        accountId,
        keyId,
        owner: 'test',
        amount: 8_000_000,
        expiresAt: Date.now() + 60_000,
        now: Date.now(),
      }),
    ).toBe(8_000_000);
    const tooMuch = await admin('POST', `/admin/api/accounts/${accountId}/credits`, { usd: '-2.000001' });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body.error.code).toBe('insufficient_balance');
    expect((await admin('POST', `/admin/api/accounts/${accountId}/credits`, { usd: '-2' })).body.balance_usd).toBe(
      '8.000000',
    );
    await closeLease(db(), lease);
    expect((await verifyLedger(db())).problems.filter((p) => p.account_id === accountId)).toEqual([]);
  });

  test("disable: the account's keys get 401 at once, its sessions end, it cannot log in; enable brings it back", async () => {
    const c = new ConsoleClient(gw.url);
    const email = uniqueEmail();
    await c.register(email);
    const { body } = await c.post('/console/api/keys', { name: 'k' });
    expect((await chat(body.secret)).choices).toHaveLength(1);
    const off = await admin('POST', `/admin/api/accounts/${c.account.id}/disable`);
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ id: c.account.id, status: 'disabled' });
    await expect(chat(body.secret)).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect((await c.get('/console/api/account')).status).toBe(401);
    const login = await new ConsoleClient(gw.url).login(email);
    expect(login.status).toBe(403);
    expect(login.body.error).toEqual({
      message: 'This account is disabled',
      type: 'permission_error',
      param: null,
      code: 'account_disabled',
    });
    const on = await admin('POST', `/admin/api/accounts/${c.account.id}/enable`);
    expect(on.body.status).toBe('active');
    expect((await chat(body.secret)).choices).toHaveLength(1);
    expect((await new ConsoleClient(gw.url).login(email, PASSWORD)).status).toBe(200);
    expect((await admin('POST', '/admin/api/accounts/987654321/disable')).status).toBe(404);
    expect((await admin('POST', '/admin/api/accounts/abc/disable')).status).toBe(400);
  });
});

describe('redemption codes', () => {
  test('a batch of unique codes, each redeemable once in the console', async () => {
    const r = await admin('POST', '/admin/api/redemption-codes', { count: 25, usd: '2.5', note: 'giveaway' });
    expect(r.status).toBe(201);
    expect(r.body.codes).toHaveLength(25);
    for (const code of r.body.codes)
      expect(code).toEqual({
        id: expect.any(Number),
        code: expect.stringMatching(/^SY(-[0-9A-Z]{5}){4}$/),
        amount_usd: '2.500000',
      });
    expect(new Set(r.body.codes.map((c: any) => c.code)).size).toBe(25);
    const c = await registered(gw.url);
    const redeemed = await c.post('/console/api/topup/redeem', { code: r.body.codes[3].code });
    expect(redeemed.body).toEqual({ amount_usd: '2.500000', balance_usd: '3.500000' });
    expect((await c.post('/console/api/topup/redeem', { code: r.body.codes[3].code })).status).toBe(409);
    expect((await db()('redemption_codes').where('id', r.body.codes[3].id).first()).note).toBe('giveaway');
  });

  test('count 1..1000 and a positive amount', async () => {
    for (const body of [
      { count: 0, usd: '1' },
      { count: 1001, usd: '1' },
      { count: 1, usd: '0' },
      { count: 1, usd: '-1' },
      { count: 1.5, usd: '1' },
      { usd: '1' },
    ]) {
      const r = await admin('POST', '/admin/api/redemption-codes', body);
      expect({ body, status: r.status }).toEqual({ body, status: 400 });
    }
  });
});

describe('Idempotency-Key', () => {
  const grant = (accountId: number, usd: string, key: string) =>
    admin('POST', `/admin/api/accounts/${accountId}/credits`, { usd }, TOKEN, gw.url, { 'idempotency-key': key });

  test('a retried grant gets the first answer and credits nothing more, even when the retries arrive at once', async () => {
    const c = await registered(gw.url);
    const before = Number((await db()('accounts').where('id', c.account.id).first()).balance_micros);
    const first = await grant(c.account.id, '5', `grant-${c.account.id}`);
    expect(first.status).toBe(200);
    const again = await Promise.all(Array.from({ length: 5 }, () => grant(c.account.id, '5', `grant-${c.account.id}`)));
    for (const r of again) expect(r).toMatchObject({ status: 200, body: first.body });
    const concurrent = await Promise.all(
      Array.from({ length: 5 }, () => grant(c.account.id, '7', `burst-${c.account.id}`)),
    );
    expect(new Set(concurrent.map((r) => r.body.ledger_id)).size).toBe(1);
    expect(Number((await db()('accounts').where('id', c.account.id).first()).balance_micros)).toBe(before + 12_000_000);
    expect((await db()('ledger').where({ account_id: c.account.id, kind: 'grant' })).length).toBe(2);
    // without a key every request is a grant of its own
    await admin('POST', `/admin/api/accounts/${c.account.id}/credits`, { usd: '1' });
    await admin('POST', `/admin/api/accounts/${c.account.id}/credits`, { usd: '1' });
    expect((await db()('ledger').where({ account_id: c.account.id, kind: 'grant' })).length).toBe(4);
  });

  test('the same key with another request is refused and changes nothing', async () => {
    const c = await registered(gw.url);
    expect((await grant(c.account.id, '5', `k-${c.account.id}`)).status).toBe(200);
    const other = await grant(c.account.id, '50', `k-${c.account.id}`);
    expect(other.status).toBe(400);
    expect(other.body.error).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_reused' });
    expect((await db()('ledger').where({ account_id: c.account.id, kind: 'grant' })).length).toBe(1);
  });

  test('a retried code batch shows the same codes and makes no new ones', async () => {
    const key = `codes-${Date.now()}-${Math.random()}`;
    const make = () =>
      admin('POST', '/admin/api/redemption-codes', { count: 2, usd: '3' }, TOKEN, gw.url, { 'idempotency-key': key });
    const countBefore = Number((await db()('redemption_codes').count({ n: '*' }))[0].n);
    const first = await make();
    expect(first.status).toBe(201);
    expect(await make()).toMatchObject({ status: 201, body: first.body });
    expect(Number((await db()('redemption_codes').count({ n: '*' }))[0].n)).toBe(countBefore + 2);
  });
});

describe('keys and alerts', () => {
  test("an admin sets any key's expiry and budget, and an account's low-balance alert; unknown ids are 404s", async () => {
    const c = await registered(gw.url);
    const { key } = (await c.post('/console/api/keys', { name: 'k' })).body;
    const patch = (body: unknown, id = key.id) =>
      fetch(`${gw.url}/admin/api/keys/${id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const changed = await patch({ expires_at: later, budget: { usd: '2.5', period: 'week' } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      id: key.id,
      expires_at: later,
      budget: { usd: '2.500000', period: 'week', spent_usd: '0.000000' },
    });
    expect((await c.get('/console/api/keys')).body.data[0].budget.usd).toBe('2.500000'); // the owner sees it
    expect((await patch({ budget: null })).body.budget).toBeNull();
    expect((await patch({ expires_at: '2001-01-01T00:00:00Z' })).status).toBe(400);
    expect((await patch({ budget: null }, 987654321)).status).toBe(404);
    const alert = (id: number, body: unknown) =>
      fetch(`${gw.url}/admin/api/accounts/${id}/alert`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    expect((await alert(c.account.id, { low_balance_usd: '3' })).body).toEqual({
      account_id: c.account.id,
      low_balance_usd: '3.000000',
    });
    expect((await c.get('/console/api/account')).body.low_balance_usd).toBe('3.000000');
    expect((await alert(987654321, { low_balance_usd: '3' })).status).toBe(404);
  });
});

describe('the CLI', () => {
  const ROOT = path.resolve(__dirname, '../..');
  const run = (...args: string[]) =>
    new Promise<{ code: number; out: any; err: string }>((resolve) =>
      execFile(
        process.execPath,
        ['-r', 'tsx/cjs', '-e', "require('./src/cli.ts').main(process.argv.slice(1))", '--', ...args],
        { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent' } },
        (e, stdout, stderr) =>
          resolve({ code: e ? Number(e.code) : 0, out: stdout ? JSON.parse(stdout) : null, err: stderr }),
      ),
    );

  test('codes create, accounts disable / enable, credits grant', async () => {
    const codes = await run('codes', 'create', '--count', '3', '--usd', '4');
    expect(codes.code).toBe(0);
    expect(codes.out.codes).toEqual(
      Array.from({ length: 3 }, () => ({
        id: expect.any(Number),
        code: expect.stringMatching(/^SY-/),
        amount_usd: '4.000000',
      })),
    );
    const c = await registered(gw.url);
    expect((await c.post('/console/api/topup/redeem', { code: codes.out.codes[0].code })).body.amount_usd).toBe(
      '4.000000',
    );

    const { body } = await c.post('/console/api/keys', {});
    const off = await run('accounts', 'disable', String(c.account.id));
    expect(off.out).toMatchObject({ id: c.account.id, status: 'disabled' });
    await expect(chat(body.secret)).rejects.toMatchObject({ status: 401 });
    const on = await run('accounts', 'enable', String(c.account.id));
    expect(on.out.status).toBe('active');
    expect((await chat(body.secret)).choices).toHaveLength(1);

    const grant = await run('credits', 'grant', '--account', String(c.account.id), '--usd', '2');
    expect(grant.code).toBe(0);
    expect((await db()('ledger').where({ account_id: c.account.id, kind: 'grant' })).length).toBe(1);

    // a retried grant with the same Idempotency-Key credits nothing more — from the CLI or the admin API
    const once = await run(
      'credits',
      'grant',
      '--account',
      String(c.account.id),
      '--usd',
      '3',
      '--idempotency-key',
      `cli-${c.account.id}`,
    );
    const twice = await run(
      'credits',
      'grant',
      '--account',
      String(c.account.id),
      '--usd',
      '3',
      '--idempotency-key',
      `cli-${c.account.id}`,
    );
    expect(twice.out).toEqual(once.out);
    const api = await admin('POST', `/admin/api/accounts/${c.account.id}/credits`, { usd: '3' }, TOKEN, gw.url, {
      'idempotency-key': `cli-${c.account.id}`,
    });
    expect(api.body.ledger_id).toBe(once.out.ledger_id);
    expect((await db()('ledger').where({ account_id: c.account.id, kind: 'grant' })).length).toBe(2);
    const expiring = await run(
      'keys',
      'create',
      '--account',
      String(c.account.id),
      '--expires',
      '2099-01-01T00:00:00Z',
    );
    expect(expiring.out.expires_at).toBe('2099-01-01T00:00:00.000Z');
    expect((await run('keys', 'create', '--account', String(c.account.id), '--expires', '2020-01-01')).code).toBe(2);
    expect((await run('codes', 'create', '--count', '0', '--usd', '4')).code).toBe(2);
    expect((await run('codes', 'create', '--count', '2')).code).toBe(2);
    expect((await run('accounts', 'disable', '987654321')).code).toBe(1);
    expect((await verifyLedger(db())).problems).toEqual([]);
  }, 120_000); // a dozen CLI processes, each starting tsx: ~18 s on an idle 2-core machine

  test('keys update: the expiry and the budget of an existing key; the running gateway applies them', async () => {
    const { secret, keyId } = await gw.newKey();
    const budgeted = await run('keys', 'update', String(keyId), '--budget', '0.000001', '--period', 'week');
    expect(budgeted.code).toBe(0);
    expect(budgeted.out.budget).toMatchObject({ usd: '0.000001', period: 'week' });
    const refused = await chat(secret).catch((e) => e);
    expect(refused.status).toBe(429);
    expect(refused.error.message).toMatch(
      /^Insufficient quota: this key's budget of 0\.000001 USD per week is used up; it resets at /,
    );
    expect((await run('keys', 'update', String(keyId), '--no-budget')).out.budget).toBeNull();
    expect((await chat(secret)).choices).toHaveLength(1);
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    expect((await run('keys', 'update', String(keyId), '--expires', soon)).out.expires_at).toBe(soon);
    expect((await run('keys', 'update', String(keyId), '--expires', 'never')).out.expires_at).toBeNull();
    expect((await run('keys', 'update', String(keyId), '--budget', '5')).code).toBe(2); // --budget needs --period
    expect((await run('keys', 'update', String(keyId))).code).toBe(2);
    expect((await run('keys', 'update', '987654321', '--no-budget')).code).toBe(1);
  }, 120_000);
});
