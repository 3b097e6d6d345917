/**
 * Operators as their own users of /admin/api: made with the CLI, signed in with a password and a real TOTP code
 * (otplib, as an authenticator app makes them), each role allowed or refused by the operation's role in the
 * contract, the CSRF header required on state-changing calls, the audit log naming the operator, failed sign-ins
 * limited as the console's without a stranger locking the operator out, and no password or TOTP secret in any
 * answer or audit record. On DATABASE_URL.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { toString as qrCode } from 'qrcode';
import { startGateway, type TestGateway } from '../helpers/app';
import { ConsoleClient, uniqueEmail } from '../helpers/console';
import { Authenticator } from '../helpers/totp';

jest.setTimeout(60_000); // operators are made with the CLI, a process of its own: seconds each on a busy machine

const TOKEN = 'admin-token-for-operator-tests-0123456789';
const ROOT = path.resolve(__dirname, '../..');

let gw: TestGateway;
/** Everything the gateway answered in this file, to grep for secrets at the end. */
const answers: string[] = [];
/** Every password and TOTP secret made in this file. */
const passwords: string[] = [];
const totpSecrets: string[] = [];
/** First passwords the admin API made and answered (once). */
const answeredPasswords: string[] = [];

const CONFIG = `
console: { login_attempts_per_email: 4 }
server: { trust_proxy: [127.0.0.1/8] }
limits: { rpm: 0, tpm: 0 }
providers: { local: { type: mock } }
models:
  - { id: mock-chat, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: local } ] }
`;

beforeAll(async () => {
  gw = await startGateway(CONFIG, { ...process.env, ADMIN_TOKEN: TOKEN });
});

afterAll(async () => {
  await gw?.close();
});

/** `switchyard ARGS` from the sources, on the test database; its printed JSON. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<any> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['-r', 'tsx/cjs', '-e', "require('./src/cli.ts').main(process.argv.slice(1))", '--', ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent', ...env } },
      (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(JSON.parse(stdout))),
    ),
  );
}

/** An operator's browser: its cookie, its CSRF token, and (once enrolled) its authenticator app. */
class OperatorClient extends ConsoleClient {
  readonly app = new Authenticator();

  constructor(
    readonly email: string,
    readonly password: string,
    readonly id: number,
    private readonly from = '127.0.0.1',
    baseUrl = gw.url,
  ) {
    super(baseUrl);
  }

  override async call<T = any>(method: string, p: string, body?: unknown, o: { csrf?: boolean | string } = {}) {
    const r = await super.call<T>(method, p, body, { ...o, headers: { 'x-forwarded-for': this.from } });
    answers.push(JSON.stringify(r.body), r.cookies.join('\n'));
    return r;
  }

  async signIn(o: { code?: string; password?: string } = {}) {
    const code = o.code ?? (this.app.secret ? await this.app.code() : undefined);
    const r = await this.post('/admin/api/session', {
      email: this.email,
      password: o.password ?? this.password,
      ...(code && { code }),
    });
    if (r.status === 200) this.csrf = r.body.csrf_token;
    return r;
  }

  async enrol() {
    const started = await this.post('/admin/api/session/totp');
    expect(started.status).toBe(200);
    const uri = new URL(started.body.otpauth_uri);
    expect(uri.protocol).toBe('otpauth:');
    this.app.secret = uri.searchParams.get('secret')!;
    totpSecrets.push(this.app.secret);
    return this.post('/admin/api/session/totp/confirm', { code: await this.app.code() });
  }
}

/** A new operator of `role`, made with the CLI, signed in and enrolled (at the gateway of `baseUrl`). */
async function operator(role: string, baseUrl = gw.url): Promise<OperatorClient> {
  const email = uniqueEmail(role);
  const made = await cli(['operators', 'create', '--email', email, '--role', role]);
  expect(made).toMatchObject({ email, role, totp_enabled: false, disabled: false });
  passwords.push(made.password);
  const c = new OperatorClient(email, made.password, made.id, '127.0.0.1', baseUrl);
  expect((await c.signIn()).status).toBe(200);
  expect((await c.enrol()).status).toBe(200);
  return c;
}

const admin = (method: string, url: string, body?: unknown) =>
  fetch(`${gw.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

test('the first sign-in takes the password alone and can only enrol; the confirmed code turns TOTP on', async () => {
  const email = uniqueEmail('owner');
  const made = await cli(['operators', 'create', '--email', email, '--role', 'owner']);
  passwords.push(made.password);
  expect(made.password).toMatch(/^[\w-]{24}$/);
  const c = new OperatorClient(email, made.password, made.id);
  const first = await c.signIn();
  expect(first.status).toBe(200);
  expect(first.body).toMatchObject({ operator: { id: made.id, role: 'owner' }, second_factor: false });
  expect(first.cookies[0]).toMatch(/^sy_admin=[\w-]{43}; Max-Age=43200; Path=\/admin; HttpOnly; SameSite=Strict/);
  const before = await c.get('/admin/api/accounts');
  expect(before.status).toBe(403);
  expect(before.body.error.code).toBe('second_factor_required');
  const started = await c.post('/admin/api/session/totp');
  const secret = new URL(started.body.otpauth_uri).searchParams.get('secret')!;
  // The QR code an authenticator scans is that same URI, drawn as a self-contained SVG (no script, nothing fetched).
  expect(started.body.qr_svg).toBe(
    await qrCode(started.body.otpauth_uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 }),
  );
  expect(started.body.qr_svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[^>]*>/);
  expect(started.body.qr_svg).not.toMatch(/<script|href=/i);
  totpSecrets.push(secret);
  const wrong = await c.post('/admin/api/session/totp/confirm', { code: '000000' });
  expect(wrong.status).toBe(400);
  expect(wrong.body.error).toMatchObject({ code: 'invalid_code', type: 'invalid_request_error' });
  c.app.secret = secret;
  const confirmed = await c.post('/admin/api/session/totp/confirm', { code: await c.app.code() });
  expect(confirmed.body).toMatchObject({ operator: { totp_enabled: true }, second_factor: true });
  expect((await c.get('/admin/api/accounts')).status).toBe(200);
  expect((await c.post('/admin/api/session/totp')).status).toBe(409); // a stolen session cannot swap the factor
  expect((await c.get('/admin/api/session')).body).toMatchObject({ operator: { email }, second_factor: true });
});

test('a wrong code, a wrong password, a replayed code and a disabled operator are refused with the same 401', async () => {
  const c = await operator('viewer');
  const wrongCode = await c.signIn({ code: '000000' });
  const noCode = await c.signIn({ code: '' });
  const wrongPassword = await c.signIn({ password: 'not the password 1', code: '123456' });
  for (const r of [wrongCode, noCode, wrongPassword]) {
    expect(r.status).toBe(401);
    expect(r.body.error).toMatchObject({ code: 'invalid_credentials', type: 'authentication_error' });
  }
  const code = await c.app.code();
  expect((await c.signIn({ code })).status).toBe(200);
  expect((await c.signIn({ code })).status).toBe(401); // a code is good once
  await cli(['operators', 'disable', String(c.id)]);
  expect((await c.get('/admin/api/accounts')).status).toBe(401); // its sessions ended
  expect((await c.signIn()).status).toBe(401);
});

test('failed sign-ins are limited per email and address, and a stranger elsewhere does not lock the operator out', async () => {
  const c = await operator('support');
  const stranger = new OperatorClient(c.email, 'a wrong guess 12', c.id, '203.0.113.9');
  for (let i = 0; i < 4; i++) expect((await stranger.signIn({ code: '123456' })).status).toBe(401);
  const refused = await stranger.signIn({ code: '123456' });
  expect(refused.status).toBe(429);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  expect((await c.signIn()).status).toBe(200); // the operator, at its own address
});

test('each role is allowed what it may and refused the rest with a 403 naming the role and what it needs', async () => {
  const { accountId } = await gw.newKey({}, 1_000_000);
  const [owner, adminOp, support, viewer] = [
    await operator('owner'),
    await operator('admin'),
    await operator('support'),
    await operator('viewer'),
  ];
  const grant = (c: OperatorClient) => c.post(`/admin/api/accounts/${accountId}/credits`, { usd: '1', note: 'x' });
  const table: [OperatorClient, string, () => Promise<{ status: number; body: any }>, number][] = [
    [viewer, 'list accounts', () => viewer.get('/admin/api/accounts'), 200],
    [viewer, 'audit', () => viewer.get('/admin/api/audit'), 200],
    [viewer, 'grant', () => grant(viewer), 403],
    [viewer, 'operators', () => viewer.get('/admin/api/operators'), 403],
    [support, 'grant', () => grant(support), 200],
    [support, 'codes', () => support.post('/admin/api/redemption-codes', { count: 1, usd: '1' }), 201],
    [support, 'operators', () => support.get('/admin/api/operators'), 403],
    [adminOp, 'disable', () => adminOp.post(`/admin/api/accounts/${accountId}/disable`), 200],
    [adminOp, 'operators', () => adminOp.get('/admin/api/operators'), 403],
    [owner, 'enable', () => owner.post(`/admin/api/accounts/${accountId}/enable`), 200],
    [owner, 'operators', () => owner.get('/admin/api/operators'), 200],
  ];
  for (const [, what, call, status] of table) expect([what, (await call()).status]).toEqual([what, status]);
  const refused = await grant(viewer);
  expect(refused.body.error).toEqual({
    type: 'permission_error',
    code: 'insufficient_role',
    param: null,
    message: "The role 'viewer' may not call adminGrantCredits: it needs the role 'support' or a higher one",
  });
  expect((await adminOp.get('/admin/api/operators')).body.error.message).toMatch(/'admin'.*'owner'/);
  const list = await owner.get('/admin/api/operators');
  expect(list.body.data.map((o: { id: number }) => o.id)).toEqual(expect.arrayContaining([viewer.id, owner.id]));
  expect((await admin('GET', '/admin/api/operators')).status).toBe(200); // the admin token is an owner
});

test('state-changing calls need the CSRF header; signing out ends the session', async () => {
  const c = await operator('support');
  const { accountId } = await gw.newKey({}, 1_000_000);
  for (const csrf of [false, 'not-the-token']) {
    const r = await c.post(`/admin/api/accounts/${accountId}/credits`, { usd: '1' }, { csrf });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('csrf_failed');
  }
  expect((await c.del('/admin/api/session', { csrf: false })).status).toBe(403);
  const cookie = c.cookie;
  const out = await c.del('/admin/api/session');
  expect(out.status).toBe(204);
  expect(out.cookies[0]).toMatch(/^sy_admin=; Max-Age=0/);
  c.cookie = cookie; // the old cookie, replayed, is worth nothing
  expect((await c.get('/admin/api/session')).status).toBe(401);
});

test('the audit log names the operator of a session call, the admin token and the CLI as before', async () => {
  const c = await operator('support');
  const { accountId } = await gw.newKey({}, 1_000_000);
  expect((await c.post(`/admin/api/accounts/${accountId}/credits`, { usd: '1' })).status).toBe(200);
  expect((await admin('POST', `/admin/api/accounts/${accountId}/disable`)).status).toBe(200);
  const { data } = (await admin('GET', `/admin/api/audit?target=account:${accountId}`)).body;
  expect(data.map((r: { actor: string; action: string }) => [r.actor, r.action])).toEqual([
    ['admin-token', 'adminDisableAccount'],
    [`operator:${c.id} ${c.email}`, 'adminGrantCredits'],
  ]);
  const made = (await admin('GET', `/admin/api/audit?target=operator:${c.id}`)).body.data;
  // its first sign-in (the password alone) is recorded too, before the enrolment it allowed
  expect(made.map((r: { action: string }) => r.action)).toEqual([
    'confirmTotpEnrolment',
    'signInOperator',
    'operators create',
  ]);
  expect(made[1]).toMatchObject({ actor: `operator:${c.id} ${c.email}`, after: { second_factor: false } });
  expect(made[0]).toMatchObject({
    actor: `operator:${c.id} ${c.email}`,
    address: '127.0.0.1',
    before: { totp_enabled: false },
    after: { totp_enabled: true },
  });
  expect(made[2].after).toMatchObject({ id: c.id, email: c.email, role: 'support' });
  expect(made[2].actor).toMatch(/^cli:/);
});

test('without ADMIN_TOKEN the admin API is off to bearer calls, and open to operators', async () => {
  const off = await startGateway(CONFIG, { ...process.env, ADMIN_TOKEN: '' });
  try {
    const c = await operator('viewer', off.url);
    expect((await c.get('/admin/api/accounts?limit=1')).status).toBe(200);
    const bearer = await fetch(`${off.url}/admin/api/accounts`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(bearer.status).toBe(404);
  } finally {
    await off.close();
  }
});

test('a password chosen in SWITCHYARD_OPERATOR_PASSWORD is not printed; a weak one is refused', async () => {
  const password = 'operator chosen 42';
  passwords.push(password);
  const email = uniqueEmail('chosen');
  const made = await cli(['operators', 'create', '--email', email, '--role', 'viewer'], {
    SWITCHYARD_OPERATOR_PASSWORD: password,
  });
  expect(made.password).toBeUndefined();
  const c = new OperatorClient(email, password, made.id);
  expect((await c.signIn()).status).toBe(200);
  await expect(
    cli(['operators', 'create', '--email', uniqueEmail('weak'), '--role', 'viewer'], {
      SWITCHYARD_OPERATOR_PASSWORD: 'short',
    }),
  ).rejects.toThrow(/at least 10 characters/);
  await expect(cli(['operators', 'create', '--email', uniqueEmail('root'), '--role', 'root'])).rejects.toThrow(
    /--role must be one of owner, admin, support, viewer/,
  );
});

test('owners add operators (the first password answered once) and disable them, audited; other roles are refused', async () => {
  const [owner, adminOp] = [await operator('owner'), await operator('admin')];
  const email = uniqueEmail('added');
  expect((await adminOp.post('/admin/api/operators', { email, role: 'support' })).status).toBe(403);
  const made = await owner.post('/admin/api/operators', { email, role: 'support' });
  expect(made.status).toBe(201);
  expect(made.body.operator).toMatchObject({ email, role: 'support', totp_enabled: false, disabled: false });
  expect(made.body.password).toMatch(/^[\w-]{24}$/);
  answeredPasswords.push(made.body.password);
  const again = await owner.post('/admin/api/operators', { email: email.toUpperCase(), role: 'viewer' });
  expect([again.status, again.body.error.code, again.body.error.param]).toEqual([409, 'operator_exists', 'email']);
  expect((await owner.post('/admin/api/operators', { email: 'not-an-address', role: 'viewer' })).status).toBe(400);
  expect((await owner.post('/admin/api/operators', { email: uniqueEmail('x'), role: 'root' })).status).toBe(400);

  const added = new OperatorClient(email, made.body.password, made.body.operator.id);
  expect((await added.signIn()).status).toBe(200);
  expect((await added.enrol()).status).toBe(200);
  expect((await added.get('/admin/api/accounts')).status).toBe(200);
  expect((await adminOp.post(`/admin/api/operators/${added.id}/disable`)).status).toBe(403);
  const off = await owner.post(`/admin/api/operators/${added.id}/disable`);
  expect(off.body).toMatchObject({ id: added.id, email, disabled: true });
  expect((await added.get('/admin/api/accounts')).status).toBe(401); // its session ended
  expect((await added.signIn()).status).toBe(401);
  expect((await owner.post('/admin/api/operators/999999/disable')).body.error).toMatchObject({ code: 'not_found' });

  const ownerActor = `operator:${owner.id} ${owner.email}`;
  const onIt = (await admin('GET', `/admin/api/audit?target=operator:${added.id}`)).body.data;
  // Newest first: the refused sign-in after the disabling, the disabling, the enrolment and the first sign-in.
  expect(onIt.map((r: { action: string }) => r.action)).toEqual([
    'signInOperatorFailed',
    'adminDisableOperator',
    'confirmTotpEnrolment',
    'signInOperator',
  ]);
  expect(onIt[1]).toMatchObject({ actor: ownerActor, before: { disabled: false }, after: { disabled: true } });
  const creations = (await admin('GET', '/admin/api/audit?action=adminCreateOperator')).body.data;
  const creation = creations.find((r: any) => r.after?.operator?.email === email);
  expect(creation).toMatchObject({ actor: ownerActor, after: { password: `…${made.body.password.slice(-4)}` } });
});

test('no answer and no audit record carries a password or a TOTP secret', async () => {
  const audit = await cli(['audit', 'list', '--limit', '1000']);
  const everything = [...answers, JSON.stringify(audit)].join('\n');
  expect(passwords.length).toBeGreaterThan(10);
  for (const p of passwords) expect([p, everything.includes(p)]).toEqual([p, false]);
  // A TOTP secret appears once: in the otpauth URI of the answer that started its enrolment, never after.
  for (const t of totpSecrets) expect([t, everything.split(t).length - 1]).toEqual([t, 1]);
  // So does a first password the admin API made: in the answer to the owner who made it.
  expect(answeredPasswords.length).toBeGreaterThan(0);
  for (const p of answeredPasswords) expect([p, everything.split(p).length - 1]).toEqual([p, 1]);
  expect(answers.filter((a) => a.includes('otpauth://')).length).toBe(totpSecrets.length);
  expect(everything).not.toMatch(/scrypt\$/);
});
