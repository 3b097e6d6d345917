/**
 * Operators signing in with OpenID Connect, against a real OpenID provider (oidc-provider, run in a child process:
 * test/fakes/oidcProvider.mjs) on a loopback port, driven as a browser drives it: each redirect followed by hand,
 * cookies kept, the provider's login form posted. The user's groups map to a role (the most powerful that maps),
 * which follows the groups at every sign-in; no mapped group, a disabled operator, a tampered state and a replayed
 * answer are refused; the session is the password sign-in's, past the second factor. On DATABASE_URL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createOperator, disableOperator } from '../../src/accounts/operators';
import { hashPassword } from '../../src/accounts/passwords';
import { startGateway, type TestGateway } from '../helpers/app';
import { ConsoleClient, uniqueEmail } from '../helpers/console';
import { freePort } from '../helpers/process';

const TOKEN = 'admin-token-for-oidc-tests-0123456789';
const CLIENT_ID = 'switchyard-test';
const CLIENT_SECRET = 'oidc-client-secret-for-tests-0123456789';
const CALLBACK = '/admin/api/session/oidc/callback';

const config = (issuer: string, extra = '') => `
admin:
  oidc:
    issuer: ${issuer}
    client_id: ${CLIENT_ID}
    client_secret: \${OIDC_CLIENT_SECRET}
    label: Test IdP
    scopes: [openid, email, profile, groups]
    roles: { sy-owners: owner, sy-admins: admin, sy-support: support, sy-viewers: viewer }
${extra}
server: { trust_proxy: [127.0.0.1/8] }
providers: { local: { type: mock } }
models:
  - { id: mock-chat, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: local } ] }
`;

let gw: TestGateway;
let idp: ChildProcess | undefined;
let issuer: string;
/** The answer of a sign-in started while the provider was not yet up. */
let whileDown: { status: number; body: any };
/** Everything the gateway answered in this file, to grep for the client secret at the end. */
const answers: string[] = [];

beforeAll(async () => {
  issuer = `http://127.0.0.1:${await freePort()}`;
  gw = await startGateway(config(issuer), { ...process.env, ADMIN_TOKEN: TOKEN, OIDC_CLIENT_SECRET: CLIENT_SECRET });
  const r = await fetch(`${gw.url}/admin/api/session/oidc`, { redirect: 'manual' });
  whileDown = { status: r.status, body: await r.json() };
  idp = await startProvider(new URL(issuer).port, `${gw.url}${CALLBACK}`);
}, 30_000);

afterAll(async () => {
  idp?.kill();
  await gw?.close();
});

/** The provider, up once it says so; its own notices (development keys, Node's version) go nowhere. */
function startProvider(port: string, redirectUri: string): Promise<ChildProcess> {
  const script = path.join(__dirname, '../fakes/oidcProvider.mjs');
  const child = spawn(process.execPath, [script, port, redirectUri, CLIENT_ID, CLIENT_SECRET], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).startsWith('ready') && resolve(child));
    child.once('exit', (code) => reject(new Error(`the OpenID provider exited (${code}): ${err}`)));
  });
}

interface User {
  sub: string;
  email: string;
  groups: string[];
  email_verified?: boolean;
}

const newUser = (groups: string[], tag = 'op'): User => {
  const email = uniqueEmail(tag);
  return { sub: `sub-${email}`, email, groups };
};

/** A browser: follows nothing by itself, keeps cookies (by name, sent where their Path says). */
class Browser {
  private readonly jar = new Map<string, { value: string; path: string }>();

  async go(url: string, init: { method?: string; form?: Record<string, string> } = {}) {
    const u = new URL(url);
    const cookie = [...this.jar]
      .filter(([, c]) => u.pathname.startsWith(c.path))
      .map(([k, c]) => `${k}=${c.value}`)
      .join('; ');
    const r = await fetch(u, {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers: {
        ...(cookie && { cookie }),
        ...(init.form && { 'content-type': 'application/x-www-form-urlencoded' }),
      },
      body: init.form && new URLSearchParams(init.form).toString(),
    });
    for (const c of r.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(';').map((s) => s.trim());
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      const p = attrs.find((a) => a.toLowerCase().startsWith('path='))?.slice(5) ?? '/';
      if (!value || /max-age=0/i.test(c)) this.jar.delete(name);
      else this.jar.set(name, { value, path: p });
    }
    const text = await r.text();
    if (url.startsWith(gw.url)) answers.push(text, r.headers.getSetCookie().join('\n'));
    return { status: r.status, location: r.headers.get('location'), text, cookies: r.headers.getSetCookie() };
  }

  cookie = (name: string) => this.jar.get(name)?.value;

  /** From the sign-in button to the provider's redirect back: the callback URL (not opened yet). */
  async toCallback(user: User): Promise<string> {
    const start = await this.go(`${gw.url}/admin/api/session/oidc`);
    expect(start.status).toBe(302);
    const login = await this.go(start.location!);
    expect(login.status).toBe(303);
    const form = new URL(login.location!, issuer).href;
    const { email_verified, ...claims } = user;
    const posted = await this.go(form, {
      method: 'POST',
      form: { ...claims, groups: user.groups.join(','), email_verified: String(email_verified ?? true) },
    });
    expect(posted.status).toBe(303);
    const back = await this.go(new URL(posted.location!, issuer).href);
    expect(back.status).toBe(303);
    expect(back.location!.startsWith(`${gw.url}${CALLBACK}?`)).toBe(true);
    return back.location!;
  }

  /** The whole sign-in; the gateway's last answer, JSON parsed when it is an error. */
  async signIn(user: User) {
    const r = await this.go(await this.toCallback(user));
    return { ...r, body: r.text ? JSON.parse(r.text) : null };
  }

  /** An admin API client with this browser's operator session. */
  async operator(): Promise<ConsoleClient> {
    const c = new ConsoleClient(gw.url);
    c.cookie = `sy_admin=${this.cookie('sy_admin')}`;
    const me = await c.get('/admin/api/session');
    expect(me.status).toBe(200);
    c.csrf = me.body.csrf_token;
    return c;
  }
}

/** A new browser signed in as `user`, and its admin API client. */
async function signedIn(user: User) {
  const b = new Browser();
  const r = await b.signIn(user);
  expect([r.status, r.location]).toEqual([302, '/admin/']);
  return { browser: b, client: await b.operator() };
}

const admin = (url: string) =>
  fetch(`${gw.url}${url}`, { headers: { authorization: `Bearer ${TOKEN}` } }).then(
    async (r) => (await r.json()) as any,
  );

const audit = async (target?: string) =>
  (await admin(`/admin/api/audit?action=finishOperatorOidcSignIn${target ? `&target=${target}` : ''}`)).data;

test('a provider that is down at start-up is not fatal: 503 until it answers; the sign-in page is told the methods', async () => {
  expect(whileDown.status).toBe(503);
  expect(whileDown.body.error).toMatchObject({
    code: 'oidc_provider_unavailable',
    message: 'The OpenID provider cannot be reached; try again later',
  });
  const methods = await fetch(`${gw.url}/admin/api/session/methods`).then((r) => r.json());
  expect(methods).toEqual({ password: true, oidc: { label: 'Test IdP', url: '/admin/api/session/oidc' } });
  const start = await new Browser().go(`${gw.url}/admin/api/session/oidc`);
  expect(start.status).toBe(302);
  const to = new URL(start.location!);
  expect(to.origin + to.pathname).toBe(`${issuer}/auth`);
  expect(Object.fromEntries(to.searchParams)).toMatchObject({
    client_id: CLIENT_ID,
    response_type: 'code',
    scope: 'openid email profile groups',
    redirect_uri: `${gw.url}${CALLBACK}`,
    code_challenge_method: 'S256',
  });
  for (const p of ['state', 'nonce', 'code_challenge']) expect(to.searchParams.get(p)).toMatch(/^[\w-]{43}$/);
  expect(start.cookies[0]).toMatch(
    /^sy_oidc=[\w-]{43}; Max-Age=600; Path=\/admin\/api\/session\/oidc; HttpOnly; SameSite=Lax$/,
  );
});

test('a user in sy-admins becomes an admin: the session works where admin may, and is refused where it may not', async () => {
  const user = newUser(['engineering', 'sy-admins']);
  const b = new Browser();
  const r = await b.signIn(user);
  expect(r.status).toBe(302);
  expect(r.location).toBe('/admin/');
  expect(r.cookies[0]).toMatch(/^sy_admin=[\w-]{43}; Max-Age=43200; Path=\/admin; HttpOnly; SameSite=Strict$/);
  const c = await b.operator();
  const me = await c.get('/admin/api/session');
  expect(me.body).toMatchObject({
    operator: { email: user.email, role: 'admin', disabled: false },
    second_factor: true,
  });
  expect((await c.get('/admin/api/accounts?limit=1')).status).toBe(200);
  const { accountId } = await gw.newKey({}, 1_000_000);
  expect((await c.post(`/admin/api/accounts/${accountId}/credits`, { usd: '1', note: 'oidc' })).status).toBe(200);
  const operators = await c.get('/admin/api/operators');
  expect(operators.status).toBe(403);
  expect(operators.body.error).toMatchObject({ code: 'insufficient_role' });
  expect(operators.body.error.message).toMatch(/'admin'.*'owner'/);
  const [record] = await audit(`operator:${me.body.operator.id}`);
  expect(record).toMatchObject({
    actor: `operator:${me.body.operator.id} ${user.email}`,
    address: '127.0.0.1',
    before: null,
    after: {
      email: user.email,
      role: 'admin',
      oidc: { issuer, subject: user.sub, groups: ['engineering', 'sy-admins'] },
    },
  });
});

test('the most powerful role of the groups that map wins, whatever their order; an owner sees the operators', async () => {
  const user = newUser(['sy-viewers', 'sy-owners', 'sy-support']);
  const { client } = await signedIn(user);
  const me = (await client.get('/admin/api/session')).body.operator;
  expect(me.role).toBe('owner');
  const list = await client.get('/admin/api/operators');
  expect(list.status).toBe(200);
  expect(list.body.data).toContainEqual(expect.objectContaining({ id: me.id, email: user.email, role: 'owner' }));
  // made by OpenID Connect: it has no password to sign in with
  const password = await new ConsoleClient(gw.url).post('/admin/api/session', { email: user.email, password: '' });
  expect(password.status).toBe(401);
});

test('a user in no mapped group is refused with a 403 that says why, recorded in the audit log', async () => {
  const user = newUser(['engineering', 'sales'], 'nobody');
  const b = new Browser();
  const r = await b.signIn(user);
  expect(r.status).toBe(403);
  expect(r.body.error).toEqual({
    type: 'permission_error',
    code: 'oidc_no_role',
    param: null,
    message:
      'None of your groups at the OpenID provider (engineering, sales) is given a role here: an owner maps groups to roles in admin.oidc.roles',
  });
  expect(b.cookie('sy_admin')).toBeUndefined();
  const refused = (await audit()).find((a: any) => a.actor === `oidc:${user.email}`);
  expect(refused).toMatchObject({
    target: null,
    after: { refused: 'no_role', email: user.email, subject: user.sub, groups: ['engineering', 'sales'] },
  });
  const none = await new Browser().signIn({ ...newUser([]), email_verified: false });
  expect([none.status, none.body.error.code]).toEqual([403, 'oidc_email_unverified']);
});

test('a user moved between groups has the new role from the next sign-in, in every session of the operator', async () => {
  const user = newUser(['sy-admins']);
  const first = await signedIn(user);
  const id = (await first.client.get('/admin/api/session')).body.operator.id;
  const second = await signedIn({ ...user, groups: ['sy-support'] });
  expect((await second.client.get('/admin/api/session')).body.operator).toMatchObject({ id, role: 'support' });
  expect((await first.client.get('/admin/api/session')).body.operator.role).toBe('support');
  expect((await first.client.get('/admin/api/farming')).status).toBe(200);
  const [now, before] = await audit(`operator:${id}`);
  expect([before.after.role, now.before.role, now.after.role]).toEqual(['admin', 'admin', 'support']);
  // moved out of every mapped group: refused, the operator kept as it was
  const out = await new Browser().signIn({ ...user, groups: ['alumni'] });
  expect([out.status, out.body.error.code]).toEqual([403, 'oidc_no_role']);
});

test('an operator disabled here stays refused, whatever its groups; its sessions ended', async () => {
  const user = newUser(['sy-owners']);
  const { client } = await signedIn(user);
  const id = (await client.get('/admin/api/session')).body.operator.id;
  await disableOperator(gw.app.db, id);
  expect((await client.get('/admin/api/accounts')).status).toBe(401);
  const again = await new Browser().signIn(user);
  expect(again.status).toBe(403);
  expect(again.body.error).toMatchObject({
    code: 'operator_disabled',
    message: `The operator ${user.email} is disabled here`,
  });
  const [refused] = await audit(`operator:${id}`);
  expect(refused.after).toMatchObject({ refused: 'operator_disabled', groups: ['sy-owners'] });
});

test('an operator with a password is linked by its email at its first OpenID sign-in and takes the role of its groups', async () => {
  const email = uniqueEmail('linked');
  const made = await createOperator(gw.app.db, email, 'viewer', await hashPassword('a long password 42'));
  const { client } = await signedIn({ sub: `sub-${email}`, email, groups: ['sy-admins'] });
  expect((await client.get('/admin/api/session')).body.operator).toMatchObject({ id: made.id, role: 'admin' });
  // the provider later gives that address to someone else: they do not take the operator over
  const other = await new Browser().signIn({ sub: `another-${email}`, email, groups: ['sy-owners'] });
  expect([other.status, other.body.error.code]).toEqual([403, 'oidc_identity_conflict']);
});

test('a tampered state, a replayed answer, another browser and a refusal by the provider are 400s that say so', async () => {
  const b = new Browser();
  const url = new URL(await b.toCallback(newUser(['sy-admins'])));
  const tampered = new URL(url);
  tampered.searchParams.set('state', 'x'.repeat(43));
  const t = await b.go(tampered.href);
  expect([t.status, JSON.parse(t.text).error.code]).toEqual([400, 'oidc_state_mismatch']);
  // the sign-in is used up by the tampered answer: the genuine one cannot follow it
  const after = await b.go(url.href);
  expect([after.status, JSON.parse(after.text).error.code]).toEqual([400, 'oidc_sign_in_expired']);

  const ok = new Browser();
  const good = await ok.toCallback(newUser(['sy-admins']));
  const stranger = await new Browser().go(good); // a callback link opened in another browser signs nobody in
  expect([stranger.status, JSON.parse(stranger.text).error.code]).toEqual([400, 'oidc_sign_in_expired']);
  expect((await ok.go(good)).status).toBe(302);
  const replayed = await ok.go(good);
  expect(replayed.status).toBe(400);
  expect(JSON.parse(replayed.text).error.message).toMatch(/expired \(10 minutes\), was already used/);

  const denied = new Browser();
  const state = new URL((await denied.go(`${gw.url}/admin/api/session/oidc`)).location!).searchParams.get('state');
  const refused = await denied.go(`${gw.url}${CALLBACK}?error=access_denied&state=${state}`);
  expect([refused.status, JSON.parse(refused.text).error.message]).toEqual([
    400,
    'The OpenID provider refused the sign-in (access_denied)',
  ]);
});

test('a code exchanged with a forged PKCE verifier or nonce does not verify (the provider refuses the code)', async () => {
  // Two sign-ins in one browser: the second's cookie replaces the first's, so the first's answer (its code made for
  // the first's PKCE challenge and nonce) arrives with the second's state swapped in: the code does not verify.
  const b = new Browser();
  const firstAnswer = new URL(await b.toCallback(newUser(['sy-admins'])));
  const second = await b.go(`${gw.url}/admin/api/session/oidc`);
  firstAnswer.searchParams.set('state', new URL(second.location!).searchParams.get('state')!);
  const r = await b.go(firstAnswer.href);
  expect(r.status).toBe(400);
  expect(JSON.parse(r.text).error).toMatchObject({ code: 'oidc_sign_in_failed' });
  expect(JSON.parse(r.text).error.message).toMatch(
    /^The OpenID provider's answer could not be verified \(invalid_grant\)/,
  );
});

test('with allow_password: false the password sign-in is refused and the sign-in page is told; without oidc, none', async () => {
  const off = await startGateway(config(issuer, '    allow_password: false'), {
    ...process.env,
    OIDC_CLIENT_SECRET: CLIENT_SECRET,
  });
  const plain = await startGateway(config(issuer).replace(/admin:[\s\S]*?\nserver:/, 'server:'));
  try {
    const methods = await fetch(`${off.url}/admin/api/session/methods`).then((r) => r.json());
    expect(methods).toEqual({ password: false, oidc: { label: 'Test IdP', url: '/admin/api/session/oidc' } });
    const r = await new ConsoleClient(off.url).post('/admin/api/session', { email: 'a@example.com', password: 'x' });
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({
      code: 'password_sign_in_disabled',
      message: 'Signing in with a password is off here: sign in with Test IdP',
    });
    expect(await fetch(`${plain.url}/admin/api/session/methods`).then((x) => x.json())).toEqual({
      password: true,
      oidc: null,
    });
    const start = await fetch(`${plain.url}/admin/api/session/oidc`, { redirect: 'manual' });
    expect([start.status, ((await start.json()) as any).error.code]).toEqual([404, 'oidc_not_configured']);
  } finally {
    await off.close();
    await plain.close();
  }
});

test('the client secret is in no answer of the gateway and no audit record', async () => {
  const everything = [...answers, JSON.stringify(await admin('/admin/api/audit?limit=100'))].join('\n');
  expect(answers.length).toBeGreaterThan(20);
  expect(everything.includes(CLIENT_SECRET)).toBe(false);
});
