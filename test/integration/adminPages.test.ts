/**
 * What the operator's pages read and do through /admin/api, on data made by real paid requests through the gateway
 * (a mock route that answers, and a route to a closed port that fails): the overview's windows, spend by model and
 * provider and each route's errors, latency and breaker; an account with its keys, ledger, usage and sign-ins;
 * settling a debt (from the balance, or forgiven with a reason) and mailing the confirmation again; keys found by
 * prefix and disabled; redemption codes by batch and who redeemed them (never whole again), as CSV too; usage of
 * every account filtered, paged and exported as CSV, and a request's receipt (its hold, its charge, its ledger rows);
 * an operator changing their own password; the audit log of each action, sign-in and sign-out; and each role
 * refused below the operation's. On DATABASE_URL.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import OpenAI from 'openai';
import { createKey } from '../../src/accounts/keys';
import { verifyLedger } from '../../src/billing/verify';
import { startGateway, type TestGateway } from '../helpers/app';
import { ConsoleClient, registered, uniqueEmail } from '../helpers/console';
import { Authenticator } from '../helpers/totp';

jest.setTimeout(60_000); // operators are made with the CLI, a process of its own: seconds each on a busy machine

const TOKEN = 'admin-token-for-admin-pages-tests-0123456789';
const ROOT = path.resolve(__dirname, '../..');
/** Model ids of this file only: other files write to the same database at the same time. */
const PAID = `pages-chat-${process.pid}`;
const DEAD = `pages-dead-${process.pid}`;
const DEAD_PROVIDER = `pagesdead${process.pid}`;

let gw: TestGateway;
let viewer: OperatorClient;
let support: OperatorClient;
/** The account of the paid requests: a console account (it signed in), its keys, its request ids. */
let customer: ConsoleClient & { email: string };
let accountId: number;
let secret: string;
let keyId: number;
const passwords: string[] = [];

beforeAll(async () => {
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
console: { registrations_per_address: 0 }
routing: { breaker_failures: 2, breaker_cooldown_ms: 600000 }
providers:
  local: { type: mock }
  ${DEAD_PROVIDER}: { type: openai, base_url: "http://127.0.0.1:9/v1" }
models:
  - { id: ${PAID}, kind: chat, price: { input: 1000, output: 2000 }, routes: [ { provider: local, model: mock-up } ] }
  - { id: ${DEAD}, kind: chat, price: { input: 1000, output: 2000 }, routes: [ { provider: ${DEAD_PROVIDER}, model: gone } ] }
`,
    { ...process.env, ADMIN_TOKEN: TOKEN },
  );
  [viewer, support] = [await operator('viewer'), await operator('support')];
  customer = await registered(gw.url);
  expect((await customer.login(customer.email)).status).toBe(200); // a sign-in the account page shows
  accountId = customer.account.id;
  expect((await admin('POST', `/admin/api/accounts/${accountId}/credits`, { usd: '20', note: 'pages' })).status).toBe(
    200,
  );
  const made = await createKey(gw.app.db, { accountId, name: 'pages key' });
  [secret, keyId] = [made.secret, made.key.id];
  const client = new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  for (let i = 0; i < 3; i++)
    await client.chat.completions.create({
      model: PAID,
      messages: [{ role: 'user', content: `hello ${i}` }],
      max_tokens: 50,
    });
  for (let i = 0; i < 2; i++)
    await expect(
      client.chat.completions.create({ model: DEAD, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toThrow();
  await gw.settled();
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

/** `switchyard ARGS` from the sources, on the test database; its printed JSON. */
function cli(args: string[]): Promise<any> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['-r', 'tsx/cjs', '-e', "require('./src/cli.ts').main(process.argv.slice(1))", '--', ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent' } },
      (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(JSON.parse(stdout))),
    ),
  );
}

/** An operator's browser: its cookie, its CSRF token, its authenticator app. */
class OperatorClient extends ConsoleClient {
  app = new Authenticator();

  constructor(
    readonly email: string,
    public password: string,
    readonly id: number,
  ) {
    super(gw.url);
  }

  /** With a fresh code of the authenticator once enrolled, unless `code` is false (a password that fails first). */
  async signIn(password = this.password, code = true) {
    const r = await this.post('/admin/api/session', {
      email: this.email,
      password,
      ...(this.app.secret && code && { code: await this.app.code() }),
    });
    if (r.status === 200) this.csrf = r.body.csrf_token;
    return r;
  }
}

/** A new operator of `role`, made with the CLI, signed in and enrolled. */
async function operator(role: string): Promise<OperatorClient> {
  const email = uniqueEmail(role);
  const made = await cli(['operators', 'create', '--email', email, '--role', role]);
  passwords.push(made.password);
  const c = new OperatorClient(email, made.password, made.id);
  expect((await c.signIn()).status).toBe(200);
  const started = await c.post('/admin/api/session/totp');
  c.app.secret = new URL(started.body.otpauth_uri).searchParams.get('secret')!;
  expect((await c.post('/admin/api/session/totp/confirm', { code: await c.app.code() })).status).toBe(200);
  return c;
}

async function admin(method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(`${gw.url}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type'), headers: r.headers, text, body: tryJson(text) };
}

const tryJson = (t: string) => {
  try {
    return JSON.parse(t);
  } catch {
    return null;
  }
};

const audit = async (query: string) => (await admin('GET', `/admin/api/audit?${query}`)).body.data;

/** A new account with `usd` and a key, made through the admin API (a grant), with what it owes set as a reversal would. */
async function owing(usd: string, debtMicros: number) {
  const { accountId: id, secret: key } = await gw.newKey({}, 0);
  if (usd !== '0') expect((await admin('POST', `/admin/api/accounts/${id}/credits`, { usd })).status).toBe(200);
  await gw.app
    .db('accounts')
    .where('id', id)
    .update({ debt_micros: debtMicros, status: 'disabled', suspended_for_debt: true });
  gw.app.keys.changed({ accountId: id });
  return { id, key };
}

describe('overview', () => {
  test('spend by model and provider, windows, and each route with its errors, latency, breaker and last errors', async () => {
    const r = await viewer.get('/admin/api/overview');
    expect(r.status).toBe(200);
    const o = r.body;
    expect(Date.now() - Date.parse(o.generated_at)).toBeLessThan(60_000);
    const paid = o.by_model.find((m: { model: string }) => m.model === PAID);
    expect(paid).toMatchObject({ requests: 3 });
    expect(paid.spend_micros).toBeGreaterThan(0);
    expect(paid.spend_usd).toBe((paid.spend_micros / 1e6).toFixed(6));
    expect(paid.tokens).toBeGreaterThan(3);
    expect(o.by_model.find((m: { model: string }) => m.model === DEAD)).toMatchObject({ requests: 2, spend_micros: 0 });
    expect(o.by_provider.find((p: { provider: string }) => p.provider === DEAD_PROVIDER)).toBeUndefined(); // no upstream answered
    for (const w of ['hour', 'day', 'month']) {
      expect(o.windows[w].requests).toBeGreaterThanOrEqual(5);
      expect(o.windows[w].errors).toBeGreaterThanOrEqual(2);
      expect(o.windows[w].spend_micros).toBeGreaterThanOrEqual(paid.spend_micros);
      expect(o.windows[w].topups_micros).toBeGreaterThanOrEqual(20_000_000); // the grant
      expect(o.windows[w].error_rate).toBeCloseTo(o.windows[w].errors / o.windows[w].requests, 10);
    }
    const route = (m: string) => o.routes.find((x: { model: string }) => x.model === m);
    expect(route(PAID)).toMatchObject({
      provider: 'local',
      upstream_model: 'mock-up',
      index: 0,
      requests: 3,
      answered: 3,
      errors: 0,
      error_rate: 0,
      breaker: 'closed',
      last_errors: [],
    });
    expect(route(PAID).p50_ms).toEqual(expect.any(Number));
    expect(route(PAID).p99_ms).toBeGreaterThanOrEqual(route(PAID).p50_ms);
    const dead = route(DEAD);
    // Nothing answered through the dead route: its usage records name no provider. What this process's router saw
    // of it is its attempts, all failed, its open breaker and its errors.
    expect(dead).toMatchObject({
      provider: DEAD_PROVIDER,
      upstream_model: 'gone',
      requests: 2,
      errors: 2,
      error_rate: 1,
      answered: 0,
      p50_ms: null,
      breaker: 'open',
    });
    expect(dead.last_errors).toHaveLength(2);
    expect(dead.last_errors[0]).toMatchObject({
      status: null,
      message: expect.stringMatching(/cannot reach the upstream/),
    });
    expect(Date.parse(dead.last_errors[0].at)).toBeGreaterThanOrEqual(Date.parse(dead.last_errors[1].at));
  });
});

describe('accounts', () => {
  test('one account: its keys, latest ledger rows, usage over a day and a month, and console sign-ins', async () => {
    const r = await viewer.get(`/admin/api/accounts/${accountId}`);
    expect(r.status).toBe(200);
    const d = r.body;
    expect(d.account).toMatchObject({ id: accountId, email: customer.email, status: 'active' });
    expect(d.email_verified).toBe(true);
    expect(d.keys).toEqual([
      expect.objectContaining({
        id: keyId,
        account_id: accountId,
        email: customer.email,
        name: 'pages key',
        status: 'active',
      }),
    ]);
    expect(d.keys[0].prefix).toBe(secret.slice(0, 9));
    expect(JSON.stringify(d)).not.toContain(secret);
    expect(d.usage.day).toMatchObject({ requests: 5 });
    expect(d.usage.month).toEqual(d.usage.day);
    const usageRows = d.ledger.filter((l: { kind: string }) => l.kind === 'usage');
    expect(usageRows).toHaveLength(3);
    const spent = usageRows.reduce(
      (s: number, l: { amount_usd: string }) => s - Math.round(Number(l.amount_usd) * 1e6),
      0,
    );
    expect(d.usage.day.spend_micros).toBe(spent);
    expect(d.ledger.find((l: { kind: string }) => l.kind === 'grant')).toMatchObject({
      amount_usd: '20.000000',
      note: 'pages',
    });
    expect(d.ledger.map((l: { id: number }) => l.id)).toEqual(
      [...d.ledger.map((l: { id: number }) => l.id)].sort((a, b) => b - a),
    );
    expect(d.sign_ins).toEqual([{ at: expect.any(String), address: '127.0.0.1' }]);
    expect((await viewer.get('/admin/api/accounts/999999999')).status).toBe(404);
  });

  test('settle from the balance: the debt is paid out of what is free, the account active and its key working again', async () => {
    const { id, key } = await owing('5', 2_000_000);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await expect(
      client.chat.completions.create({ model: PAID, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toThrow(/401/);
    const r = await support.post(`/admin/api/accounts/${id}/settle-debt`, {});
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      account_id: id,
      paid_usd: '2.000000',
      forgiven_usd: '0.000000',
      debt_usd: '0.000000',
      balance_usd: '3.000000',
      status: 'active',
    });
    await client.chat.completions.create({ model: PAID, messages: [{ role: 'user', content: 'x' }], max_tokens: 5 });
    const ledger = (await support.get(`/admin/api/accounts/${id}`)).body.ledger;
    expect(ledger.find((l: { kind: string }) => l.kind === 'debt_payment')).toMatchObject({ amount_usd: '-2.000000' });
    const [rec] = await audit(`target=account:${id}&action=adminSettleDebt`);
    expect(rec).toMatchObject({
      actor: `operator:${support.id} ${support.email}`,
      before: { debt_usd: '2.000000', status: 'disabled' },
      after: { debt_usd: '0.000000', status: 'active', balance_usd: '3.000000' },
    });
    expect((await support.post(`/admin/api/accounts/${id}/settle-debt`, {})).body.error.code).toBe('no_debt');
  });

  test('nothing free says why; forgiving needs a reason, writes the debt off and keeps the reason in the ledger', async () => {
    const { id } = await owing('0', 3_000_000);
    const refused = await support.post(`/admin/api/accounts/${id}/settle-debt`, { from: 'balance' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'insufficient_balance', type: 'invalid_request_error' });
    expect(refused.body.error.message).toMatch(/owes 3\.000000 USD and has 0\.000000 USD free/);
    const noNote = await support.post(`/admin/api/accounts/${id}/settle-debt`, { from: 'forgive' });
    expect(noNote.status).toBe(400);
    expect(noNote.body.error).toMatchObject({ code: 'note_required', param: 'note' });
    const r = await support.post(`/admin/api/accounts/${id}/settle-debt`, { from: 'forgive', note: 'bank error' });
    expect(r.body).toMatchObject({
      forgiven_usd: '3.000000',
      paid_usd: '0.000000',
      debt_usd: '0.000000',
      status: 'active',
    });
    const d = (await support.get(`/admin/api/accounts/${id}`)).body;
    expect(d.account).toMatchObject({ debt_usd: '0.000000', balance_usd: '0.000000', status: 'active' });
    expect(d.ledger[0]).toMatchObject({
      kind: 'adjustment',
      amount_usd: '0.000000',
      note: expect.stringMatching(/forgiven: bank error$/),
    });
    expect((await verifyLedger(gw.app.db)).problems.filter((p) => p.account_id === id)).toEqual([]);
    const [rec] = await audit(`target=account:${id}&action=adminSettleDebt`);
    expect(rec.before.debt_usd).toBe('3.000000');
    expect(rec.after.debt_usd).toBe('0.000000');
  });

  test('resend the confirmation: mailed to an unconfirmed account, a 409 once confirmed; audited', async () => {
    const c = new ConsoleClient(gw.url);
    const email = uniqueEmail('unconfirmed');
    const reg = await c.register(email, undefined, undefined, { verify: false });
    const id = reg.body.account.id;
    const before = gw.mails.filter((m) => m.to === email).length;
    const r = await support.post(`/admin/api/accounts/${id}/resend-confirmation`);
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ sent: true });
    const mails = gw.mails.filter((m) => m.to === email);
    expect(mails).toHaveLength(before + 1);
    expect(mails[mails.length - 1].text).toMatch(/\/console\/verify\?token=/);
    expect(await audit(`target=account:${id}&action=adminResendConfirmation`)).toHaveLength(1);
    const done = await support.post(`/admin/api/accounts/${accountId}/resend-confirmation`);
    expect(done.status).toBe(409);
    expect(done.body.error.code).toBe('already_verified');
    expect((await support.post('/admin/api/accounts/999999999/resend-confirmation')).status).toBe(404);
  });
});

describe('keys', () => {
  test('found by their visible prefix, or exactly by the whole key; each with its account', async () => {
    const other = await createKey(gw.app.db, { accountId, name: 'second' });
    const byPrefix = await viewer.get(`/admin/api/keys?prefix=${encodeURIComponent(secret.slice(0, 9))}`);
    expect(byPrefix.status).toBe(200);
    expect(byPrefix.body.data.map((k: { id: number }) => k.id)).toContain(keyId);
    for (const k of byPrefix.body.data) expect(k.prefix.startsWith(secret.slice(0, 9))).toBe(true);
    const whole = await viewer.get(`/admin/api/keys?prefix=${encodeURIComponent(other.secret)}`);
    expect(whole.body.data).toEqual([
      expect.objectContaining({ id: other.key.id, account_id: accountId, email: customer.email, status: 'active' }),
    ]);
    const page1 = await viewer.get(`/admin/api/keys?account_id=${accountId}&limit=1`);
    expect(page1.body.data.map((k: { id: number }) => k.id)).toEqual([keyId]);
    const page2 = await viewer.get(`/admin/api/keys?account_id=${accountId}&limit=1&cursor=${page1.body.next_cursor}`);
    expect(page2.body.data.map((k: { id: number }) => k.id)).toEqual([other.key.id]);
    expect(page2.body.next_cursor).toBeNull();
    expect((await viewer.get('/admin/api/keys?prefix=sk-nothing-like-it')).body.data).toEqual([]);
  });

  test('disabled by an operator: refused from its next request on; enabled again; each change audited', async () => {
    const k = await createKey(gw.app.db, { accountId, name: 'to disable' });
    const client = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    expect((await viewer.patch(`/admin/api/keys/${k.key.id}`, { enabled: false })).status).toBe(403);
    const off = await support.patch(`/admin/api/keys/${k.key.id}`, { enabled: false });
    expect(off.status).toBe(200);
    expect(off.body.enabled).toBe(false);
    await expect(
      client.chat.completions.create({ model: PAID, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toThrow(/401/);
    const listed = await viewer.get(`/admin/api/keys?prefix=${encodeURIComponent(k.secret)}`);
    expect(listed.body.data[0].status).toBe('disabled');
    expect((await support.patch(`/admin/api/keys/${k.key.id}`, { enabled: true })).body.enabled).toBe(true);
    await client.chat.completions.create({ model: PAID, messages: [{ role: 'user', content: 'x' }], max_tokens: 5 });
    const recs = await audit(`target=key:${k.key.id}`);
    expect(recs.map((r: any) => [r.before.enabled, r.after.enabled])).toEqual([
      [false, true],
      [true, false],
    ]);
  });
});

describe('redemption codes', () => {
  test('a batch as CSV, listed by batch with who redeemed which; the codes never whole again; audited masked', async () => {
    const csv = await admin('POST', '/admin/api/redemption-codes', { count: 1, usd: '1' }, { accept: 'text/csv' });
    expect(csv.type).toBe('text/csv; charset=utf-8');
    expect(csv.text).toMatch(/^id,batch,code,amount_usd\r\n"\d+","\d+","SY-[0-9A-Z-]{23}","1\.000000"\r\n$/);
    const batch = await fetchCsvBatch();
    expect(batch.codes).toHaveLength(3);
    // an address a spreadsheet would read as a formula, were it not defused in the CSV
    const redeemer = Object.assign(new ConsoleClient(gw.url), { email: `=1+2-${uniqueEmail('formula')}` });
    expect((await redeemer.register(redeemer.email)).status).toBe(201);
    expect((await redeemer.post('/console/api/topup/redeem', { code: batch.codes[1] })).status).toBe(200);
    const list = await viewer.get(`/admin/api/redemption-codes?batch=${batch.id}`);
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(3);
    for (const c of list.body.data) {
      expect(c).toMatchObject({
        batch: batch.id,
        amount_usd: '2.000000',
        note: 'fair',
        created_by: `operator:${support.id} ${support.email}`,
      });
      expect(c.code).toMatch(/^SY-[0-9A-Z]{5}-…$/);
    }
    const redeemed = list.body.data.filter((c: { redeemed_by: unknown }) => c.redeemed_by);
    expect(redeemed).toEqual([
      expect.objectContaining({
        redeemed_by: { account_id: redeemer.account.id, email: redeemer.email },
        redeemed_at: expect.any(String),
      }),
    ]);
    expect(batch.codes[1].startsWith(redeemed[0].code.slice(0, 8))).toBe(true);
    expect((await viewer.get(`/admin/api/redemption-codes?batch=${batch.id}&status=unused`)).body.data).toHaveLength(2);
    expect((await viewer.get(`/admin/api/redemption-codes?batch=${batch.id}&status=redeemed`)).body.data).toHaveLength(
      1,
    );
    const p1 = await viewer.get(`/admin/api/redemption-codes?batch=${batch.id}&limit=2`);
    const p2 = await viewer.get(`/admin/api/redemption-codes?batch=${batch.id}&limit=2&cursor=${p1.body.next_cursor}`);
    expect([...p1.body.data, ...p2.body.data].map((c: { id: number }) => c.id)).toEqual(
      list.body.data.map((c: { id: number }) => c.id),
    );
    const listCsv = await admin('GET', `/admin/api/redemption-codes?batch=${batch.id}&format=csv`);
    expect(listCsv.text.split('\r\n')[0]).toBe(
      'id,batch,code,amount_usd,note,created_at,created_by,redeemed_at,redeemed_by_account_id,redeemed_by_email',
    );
    expect(listCsv.text).toContain(`"${redeemer.account.id}","'${redeemer.email}"`);
    const everything = JSON.stringify([
      list.body,
      listCsv.text,
      await audit('action=adminCreateRedemptionCodes&limit=10'),
    ]);
    for (const code of batch.codes) expect(everything).not.toContain(code);
    const [rec] = await audit(`action=adminCreateRedemptionCodes&limit=1`);
    expect(rec.after.codes[0].code).toMatch(/^…[0-9A-Z]{4}$/);
  });
});

/** A batch made as CSV by the support operator (its cookie and CSRF token), read as text. */
async function fetchCsvBatch(): Promise<{ id: number; codes: string[] }> {
  const r = await fetch(`${gw.url}/admin/api/redemption-codes?format=csv`, {
    method: 'POST',
    headers: { cookie: support.cookie!, 'x-csrf-token': support.csrf!, 'content-type': 'application/json' },
    body: JSON.stringify({ count: 3, usd: '2', note: 'fair' }),
  });
  expect(r.status).toBe(201);
  expect(r.headers.get('content-disposition')).toMatch(/^attachment; filename="codes-\d+\.csv"$/);
  const rows = (await r.text())
    .trim()
    .split('\r\n')
    .slice(1)
    .map((l) => l.slice(1, -1).split('","'));
  return { id: Number(rows[0][1]), codes: rows.map((row) => row[2]) };
}

describe('usage', () => {
  test("every account's records filtered by account, key, model, provider, status and time; paged", async () => {
    // the paid requests of beforeAll (other tests here make more, with other keys)
    const q = (s: string) => support.get(`/admin/api/usage?account_id=${accountId}&key_id=${keyId}&${s}`);
    const all = await q('');
    expect(all.status).toBe(200);
    const mine = all.body.data.filter((r: { model: string }) => [PAID, DEAD].includes(r.model));
    expect(mine).toHaveLength(5);
    expect(all.body.classes.map((c: { name: string }) => c.name)).toContain('prompt');
    expect((await q(`model=${DEAD}`)).body.data.map((r: any) => [r.status, r.provider, r.cost_micros])).toEqual([
      [502, null, 0],
      [502, null, 0],
    ]);
    expect((await q(`model=${DEAD}&status=error`)).body.data).toHaveLength(2);
    expect((await q(`model=${PAID}&status=ok`)).body.data).toHaveLength(3);
    expect((await q(`model=${PAID}&status=200&provider=local`)).body.data).toHaveLength(3);
    expect((await support.get(`/admin/api/usage?key_id=${keyId}&provider=${DEAD_PROVIDER}`)).body.data).toHaveLength(0);
    expect((await q(`model=${PAID}&status=error`)).body.data).toHaveLength(0);
    const later = Math.floor(Date.now() / 1000) + 3600;
    expect((await q(`model=${PAID}&from=${later}`)).body.data).toHaveLength(0);
    expect((await q(`model=${PAID}&to=${later}`)).body.data).toHaveLength(3);
    expect((await q(`model=${PAID}&to=${later * 1000}`)).body.data).toHaveLength(3);
    expect((await q(`model=${PAID}&to=2000-01-01`)).body.data).toHaveLength(0);
    const bad = await q('from=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('from');
    const p1 = await q(`model=${PAID}&limit=2`);
    const p2 = await q(`model=${PAID}&limit=2&cursor=${p1.body.next_cursor}`);
    expect([...p1.body.data, ...p2.body.data].map((r: { id: number }) => r.id)).toEqual(
      (await q(`model=${PAID}`)).body.data.map((r: { id: number }) => r.id),
    );
    expect(p2.body.next_cursor).toBeNull();
  });

  test('exported as CSV, streamed: every record of the range, whatever the limit', async () => {
    for (const how of ['format=csv&limit=1', 'limit=1']) {
      const r = await admin('GET', `/admin/api/usage?key_id=${keyId}&model=${PAID}&${how}`, undefined, {
        accept: 'text/csv',
      });
      expect(r.status).toBe(200);
      expect(r.type).toBe('text/csv; charset=utf-8');
      const lines = r.text.trim().split('\r\n');
      expect(lines[0]).toMatch(
        /^"id","request_id","created_at","account_id","key_id","model","provider","endpoint","status","counted","prompt",.*"cost_usd","latency_ms","ttfb_ms"$/,
      );
      expect(lines).toHaveLength(4);
      expect(lines[1]).toContain(`"${accountId}","${keyId}","${PAID}","local"`);
    }
  });

  test('a receipt: the record, how it was counted, its hold and what that covered, its charge and ledger row', async () => {
    const [paid] = (await support.get(`/admin/api/usage?key_id=${keyId}&model=${PAID}&limit=1`)).body.data;
    const r = await support.get(`/admin/api/usage/${paid.request_id}`);
    expect(r.status).toBe(200);
    const receipt = r.body;
    expect(receipt.record).toEqual(paid);
    expect(receipt.counted).toMatchObject({ by: 'upstream', explanation: expect.stringMatching(/reported/) });
    expect(receipt.hold.micros).toBeGreaterThanOrEqual(receipt.charge.micros);
    expect(receipt.hold.output_tokens).toBe(50); // the request's max_tokens
    expect(receipt.hold.prompt_tokens).toBeGreaterThanOrEqual(paid.usage.prompt);
    expect(receipt.charge).toEqual({ usd: paid.cost_usd, micros: paid.cost_micros, uncovered_usd: '0.000000' });
    expect(receipt.ledger).toEqual([
      expect.objectContaining({ kind: 'usage', ref: paid.request_id, amount_usd: `-${paid.cost_usd}`, key_id: keyId }),
    ]);
    expect((await support.get(`/admin/api/usage/${paid.id}`)).body.record.request_id).toBe(paid.request_id);
    const [failed] = (await support.get(`/admin/api/usage?account_id=${accountId}&model=${DEAD}&limit=1`)).body.data;
    const f = (await support.get(`/admin/api/usage/${failed.request_id}`)).body;
    expect(f.counted.by).toBe('none');
    expect(f.hold.micros).toBeGreaterThan(0);
    expect(f.charge.micros).toBe(0);
    expect(f.ledger).toEqual([]);
    const missing = await support.get('/admin/api/usage/req_nothing');
    expect(missing.status).toBe(404);
    expect(missing.body.error.param).toBe('id');
  });
});

describe('operators', () => {
  test("change one's own password: the current one checked, the new one as strong as at creation; other sessions end", async () => {
    const me = await operator('support');
    const elsewhere = new OperatorClient(me.email, me.password, me.id);
    elsewhere.app = me.app; // one authenticator app: each code is accepted once
    expect((await elsewhere.signIn()).status).toBe(200);
    const change = (current: string, next: string) =>
      me.post('/admin/api/session/password', { current_password: current, new_password: next });
    const wrong = await change('not my password 1', 'a new password 42');
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({ code: 'wrong_password', param: 'current_password' });
    const weak = await change(me.password, 'short');
    expect(weak.body.error).toMatchObject({ code: 'weak_password', param: 'new_password' });
    expect(weak.body.error.message).toMatch(/at least 10 characters/);
    const fresh = 'a new password 42';
    passwords.push(fresh);
    expect((await change(me.password, fresh)).status).toBe(204);
    expect((await me.get('/admin/api/session')).status).toBe(200); // this session stays
    expect((await elsewhere.get('/admin/api/session')).status).toBe(401); // the other ended
    expect((await me.signIn(me.password, false)).status).toBe(401);
    me.password = fresh;
    expect((await me.signIn()).status).toBe(200);
    expect((await me.del('/admin/api/session')).status).toBe(204);
    const recs = await audit(`target=operator:${me.id}`);
    expect(recs.slice(0, 5).map((r: { action: string }) => r.action)).toEqual([
      'signOutOperator',
      'signInOperator',
      'signInOperatorFailed',
      'changeOperatorPassword',
      'signInOperator',
    ]);
    expect(recs[2]).toMatchObject({
      actor: `operator:${me.id} ${me.email}`,
      address: '127.0.0.1',
      after: { failed: 'password' },
    });
  });

  test('a failed sign-in is recorded with what failed, an unknown email without a target; no password in the log', async () => {
    const email = uniqueEmail('nobody');
    await new OperatorClient(email, 'whatever it is 1', 0).signIn();
    const [rec] = await audit('action=signInOperatorFailed&limit=20').then((r) =>
      r.filter((x: { actor: string }) => x.actor === `unknown ${email}`),
    );
    expect(rec).toMatchObject({ target: null, after: { failed: 'unknown_email' } });
    const wrongCode = new OperatorClient(viewer.email, viewer.password, viewer.id);
    await wrongCode.post('/admin/api/session', { email: viewer.email, password: viewer.password, code: '000000' });
    const [coded] = await audit(`target=operator:${viewer.id}&action=signInOperatorFailed`);
    expect(coded.after).toEqual({ failed: 'code' });
    const log = JSON.stringify(await audit('limit=500'));
    for (const p of [...passwords, 'whatever it is 1']) expect([p, log.includes(p)]).toEqual([p, false]);
  });
});

test('each role: a viewer reads the pages and is refused every action and the usage; support does them', async () => {
  const reads = [
    '/admin/api/overview',
    `/admin/api/accounts/${accountId}`,
    '/admin/api/keys',
    '/admin/api/redemption-codes',
  ];
  for (const p of reads) expect([p, (await viewer.get(p)).status]).toEqual([p, 200]);
  const refused: [string, string][] = [
    ['GET', `/admin/api/usage`],
    ['GET', `/admin/api/usage/1`],
    ['POST', `/admin/api/accounts/${accountId}/settle-debt`],
    ['POST', `/admin/api/accounts/${accountId}/resend-confirmation`],
    ['POST', '/admin/api/redemption-codes'],
    ['PATCH', `/admin/api/keys/${keyId}`],
  ];
  for (const [method, p] of refused) {
    const r = await viewer.call(method, p, method === 'GET' ? undefined : {});
    expect([p, r.status, r.body.error.code]).toEqual([p, 403, 'insufficient_role']);
  }
  expect((await support.get('/admin/api/usage?limit=1')).status).toBe(200);
});
