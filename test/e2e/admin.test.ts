/**
 * /admin, the operators' web app, end to end in headless Chromium (Debian's `chromium`, driven by playwright-core)
 * against a real gateway on loopback with a mock model: an operator made with the CLI enrols TOTP from the QR page
 * and signs in with codes computed as an authenticator app does (otplib); a wrong code and too many failures are
 * refused as such; each page shows data the test made (accounts, real paid requests through the mock model, codes,
 * referrals); each action changes what a user of the gateway then sees (a suspended account's key is refused, a
 * disabled key too); and each role is refused what it may not do, twice: the page does not offer it, and a call
 * forged past the page is refused by the server, whose 403 the page shows.
 *
 * As in the console's test, every test has its own browser context and its own operators and accounts, made in the
 * test, and the page may reach nothing but the gateway. Operators other than the CLI's are made by the admin API
 * (the admin token is an owner) and enrolled through the API from the test's browser context, so that its cookie
 * is the operator's session.
 *
 * Needs the built app (`make build`; `make e2e` builds first) and /usr/bin/chromium (or CHROMIUM_PATH).
 * Screenshots go to .tmp/e2e/; with E2E_SCREENSHOT_ADMIN=docs/admin.png the Overview page is also saved there.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { connect } from '../../src/db';
import { ADMIN_DIST } from '../../src/http/consoleStatic';
import { startGateway, type TestGateway } from '../helpers/app';
import { ConsoleClient, PASSWORD, registered, uniqueEmail } from '../helpers/console';
import { freePort } from '../helpers/process';
import { Authenticator } from '../helpers/totp';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN_TOKEN = 'e2e-admin-token-for-the-operators-app';
const ROOT = path.resolve(__dirname, '..', '..');
const OUT = path.join(ROOT, '.tmp', 'e2e');
/** The key the catalog's credentials are sealed with (both gateways of this file read the same catalog). */
const SWITCHYARD_SECRET_KEY = crypto.randomBytes(32).toString('base64');

jest.setTimeout(180_000);

let gw: TestGateway;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let outside: string[] = [];
/** Origins besides the gateway's a test lets its page reach (the OpenID provider of the OIDC test). */
let origins: string[] = [];
let pageErrors: string[] = [];

// The catalog in the database, as an operator who edits it from the app has it (seeded from this file's models).
const CONFIG = `
catalog: database
console: { login_attempts_per_email: 3 }
limits: { rpm: 0, tpm: 0 }
providers: { local: { type: mock } }
models:
  - { id: mock-chat, kind: chat, owned_by: switchyard, price: { input: 0.15, output: 0.60 }, routes: [ { provider: local } ] }
  - { id: mock-embedding, kind: embedding, owned_by: switchyard, price: { input: 0.02 }, routes: [ { provider: local } ] }
`;

beforeAll(async () => {
  if (!fs.existsSync(path.join(ADMIN_DIST, 'index.html')))
    throw new Error(`the operators' app is not built (${ADMIN_DIST}): run make build`);
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  fs.mkdirSync(OUT, { recursive: true });
  await wipeCatalog(); // a catalog left in the database by another run would be served instead of this file's
  gw = await startGateway(CONFIG, { ...process.env, ADMIN_TOKEN, SWITCHYARD_SECRET_KEY });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

beforeEach(async () => {
  outside = [];
  origins = [];
  pageErrors = [];
  context = await browser.newContext({
    viewport: { width: 1440, height: 900 },
    deviceScaleFactor: 2,
    locale: 'en-US',
    timezoneId: 'UTC',
    acceptDownloads: true,
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gw.url });
  // Anything but the gateway is refused and remembered: the app must work without any other network.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if ([gw.url, ...origins].some((o) => url.startsWith(`${o}/`)) || /^(data|blob):/.test(url)) return route.continue();
    outside.push(url);
    return route.abort();
  });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (e) => pageErrors.push(e.message));
});

afterEach(async () => {
  await context?.close();
  expect(pageErrors).toEqual([]);
  expect(outside).toEqual([]);
});

async function wipeCatalog(): Promise<void> {
  const db = connect(process.env.DATABASE_URL);
  try {
    await db('catalog_revisions').del();
  } finally {
    await db.destroy();
  }
}

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

/** A call of the admin API with the admin token (an owner), outside the browser: setting up and checking. */
async function bearer(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(`${gw.url}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text && r.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

/** An operator as their authenticator app knows them. */
class Operator extends Authenticator {
  constructor(
    readonly email: string,
    readonly password: string,
    readonly id: number,
  ) {
    super();
  }
}

/**
 * A new operator of `role` (made by the admin API), signed in and enrolled from this test's browser context: its
 * page is then signed in as the operator.
 */
async function operator(role: 'owner' | 'admin' | 'support' | 'viewer'): Promise<Operator> {
  const email = uniqueEmail(role);
  const made = await bearer('POST', '/admin/api/operators', { email, role });
  expect(made.status).toBe(201);
  const op = new Operator(email, made.body.password, made.body.operator.id);
  const signedIn = await context.request.post(`${gw.url}/admin/api/session`, {
    data: { email, password: op.password },
  });
  expect(signedIn.status()).toBe(200);
  const csrf = ((await signedIn.json()) as { csrf_token: string }).csrf_token;
  const started = await context.request.post(`${gw.url}/admin/api/session/totp`, { headers: { 'x-csrf-token': csrf } });
  op.secret = new URL(((await started.json()) as { otpauth_uri: string }).otpauth_uri).searchParams.get('secret')!;
  const confirmed = await context.request.post(`${gw.url}/admin/api/session/totp/confirm`, {
    headers: { 'x-csrf-token': csrf },
    data: { code: await op.code() },
  });
  expect(confirmed.status()).toBe(200);
  return op;
}

/** Opens a page of the app as a new operator of `role` and waits for the signed-in shell. */
async function openAs(role: 'owner' | 'admin' | 'support' | 'viewer', pathname = '/'): Promise<Operator> {
  const op = await operator(role);
  await page.goto(`${gw.url}/admin${pathname}`);
  await page.getByTestId('operator-role').filter({ hasText: role }).waitFor();
  return op;
}

/** An account with `usd` and a key, and `requests` real paid requests through the mock model with it. */
async function customer(requests = 2, credits = 10_000_000): Promise<{ email: string; id: number; secret: string }> {
  const { secret, accountId } = await gw.newKey({}, credits);
  await Promise.all(Array.from({ length: requests }, () => chat(secret)));
  await gw.settled();
  const { email } = await gw.app.db('accounts').where('id', accountId).first('email');
  return { email, id: accountId, secret };
}

const sdk = (secret: string) => new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const chat = (secret: string) =>
  sdk(secret).chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: 'Hello there' }] });

/** The status /v1 answers the key with (200, or the error's). */
async function keyStatus(secret: string): Promise<number> {
  try {
    await chat(secret);
    return 200;
  } catch (e) {
    return (e as { status: number }).status;
  }
}

/** Retries an assertion until it passes (or rethrows its last failure after `timeout` ms). */
async function eventually(check: () => Promise<void>, timeout = 10_000, interval = 250): Promise<void> {
  const end = Date.now() + timeout;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > end) throw e;
      await new Promise((r) => setTimeout(r, interval));
    }
  }
}

/** The account's balance as the admin API says it ("9.999978"), found by its (unique) email. */
async function balanceOf(email: string): Promise<string> {
  const { data } = (await bearer('GET', `/admin/api/accounts?email=${encodeURIComponent(email)}`)).body;
  expect(data).toHaveLength(1);
  return data[0].balance_usd;
}

test('an operator made with the CLI enrols from the QR page, then signs in with a TOTP code; a wrong code is refused', async () => {
  const email = uniqueEmail('first-owner');
  const made = await cli(['operators', 'create', '--email', email, '--role', 'owner']);
  const op = new Operator(email, made.password, made.id);

  // Signed out, any page sends the operator to the sign-in page.
  await page.goto(`${gw.url}/admin/accounts`);
  await page.waitForURL(`${gw.url}/admin/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(op.password);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByRole('button', { name: 'No authenticator yet? Set one up' }).click();

  // Enrolment: the QR code drawn by the server is shown (as an image the page's CSP allows), and the secret as text.
  await page.waitForURL(`${gw.url}/admin/enrol`);
  const qr = page.getByTestId('totp-qr');
  await qr.waitFor();
  await eventually(async () =>
    expect(await qr.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0),
  );
  op.secret = ((await page.getByTestId('totp-secret').textContent()) ?? '').replace(/\s/g, '');
  expect(op.secret).toMatch(/^[A-Z2-7]{16,}$/);
  await page.screenshot({ path: path.join(OUT, 'admin-enrol.png') });
  await page.getByLabel('Code from the app').fill('000000');
  await page.getByRole('button', { name: 'Turn on two-factor' }).click();
  await page.getByRole('alert').filter({ hasText: 'That code is not right' }).waitFor();
  await page.getByLabel('Code from the app').fill(await op.code());
  await page.getByRole('button', { name: 'Turn on two-factor' }).click();
  await page.waitForURL(`${gw.url}/admin/`);
  await page.getByTestId('operator-role').filter({ hasText: 'owner' }).waitFor();

  // Signed out and in again: the password, then the code; a wrong code says so and lets them try again.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${gw.url}/admin/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(op.password);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByLabel('Authentication code').fill('000000');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('alert').filter({ hasText: 'Wrong email, password or code' }).waitFor();
  await page.getByLabel('Authentication code').fill(await op.code());
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(`${gw.url}/admin/`);
  await page.getByTestId('operator-role').filter({ hasText: 'owner' }).waitFor();
  // The session is the server's: a reload keeps it.
  await page.reload();
  await page.getByTestId('operator-role').filter({ hasText: 'owner' }).waitFor();
});

test('too many failed sign-ins: the page says when to try again', async () => {
  const op = new Operator(uniqueEmail('locked'), 'not the password 42', 0);
  await page.goto(`${gw.url}/admin/login`);
  for (let i = 0; i < 4; i++) {
    await page.getByLabel('Email').fill(op.email);
    await page.getByLabel('Password').fill(op.password);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByLabel('Authentication code').fill('123456');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('alert').waitFor();
    if (i < 3) await page.getByRole('button', { name: 'Back' }).click();
  }
  const alert = page.getByRole('alert');
  await alert.filter({ hasText: 'Too many failed sign-ins' }).waitFor();
  expect(await alert.textContent()).toMatch(/Try again in \d+ (seconds|minutes) \(at \d\d:\d\d\)/);
});

test('accounts: search by email, open one, grant credits with a reason, suspend and enable it', async () => {
  const c = await customer(2);
  await openAs('support', '/accounts');
  await page.getByLabel('Email or account id').fill(c.email);
  await page.getByRole('button', { name: 'Search' }).click();
  const table = page.getByTestId('accounts-table');
  await table.getByRole('link', { name: c.email }).click();
  await page.waitForURL(`${gw.url}/admin/accounts/${c.id}`);
  await page.getByRole('heading', { name: c.email }).waitFor();
  // What the paid requests left: two ledger rows of the model, and the balance below the 10 USD granted.
  await eventually(async () => expect(await page.getByTestId('account-ledger').getByText('mock-chat').count()).toBe(2));
  const before = await balanceOf(c.email);
  expect(Number(before)).toBeLessThan(10);
  expect(await page.getByTestId('account-balance').textContent()).toBe(`$${before.replace(/0{1,4}$/, '')}`);
  await page.getByTestId('account-keys').waitFor();
  await page.screenshot({ path: path.join(OUT, 'admin-account.png'), fullPage: true });

  await page.getByRole('button', { name: 'Grant or remove credits' }).click();
  const dialog = page.getByRole('dialog', { name: 'Grant or remove credits' });
  await dialog.getByLabel('Amount (USD)').fill('5');
  await dialog.getByLabel('Reason').fill('Apology for the outage');
  await dialog.getByRole('button', { name: 'Grant credits' }).click();
  await page.getByTestId('action-done').filter({ hasText: 'Granted $5.00' }).waitFor();
  const after = await balanceOf(c.email);
  expect(Number(after) - Number(before)).toBeCloseTo(5, 6);
  await eventually(async () =>
    expect(await page.getByTestId('account-ledger').getByText('grant').count()).toBeGreaterThan(0),
  );

  await page.getByRole('button', { name: 'Suspend' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Suspend' }).click();
  await page.getByTestId('action-done').filter({ hasText: 'is suspended' }).waitFor();
  await eventually(async () => expect(await keyStatus(c.secret)).toBe(401));
  await page.getByRole('button', { name: 'Enable' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Enable' }).click();
  await page.getByTestId('action-done').filter({ hasText: 'is active again' }).waitFor();
  await eventually(async () => expect(await keyStatus(c.secret)).toBe(200));

  // Each action is in the audit log, by this operator.
  const audit = (await bearer('GET', `/admin/api/audit?target=account:${c.id}`)).body.data;
  expect(audit.map((r: { action: string }) => r.action)).toEqual([
    'adminEnableAccount',
    'adminDisableAccount',
    'adminGrantCredits',
  ]);
  expect(audit[2].after.balance_usd).toBe(after);
});

test('farming: the report lists a referrer, and revoking takes back its free credits', async () => {
  const referrer = await registered(gw.url);
  await registered(gw.url, referrer.account.referral_code);
  const before = await balanceOf(referrer.email);
  expect(Number(before)).toBeGreaterThan(0);
  await openAs('support', '/farming');
  const row = page.getByTestId('farming-referrers').getByRole('row').filter({ hasText: referrer.email });
  await row.waitFor();
  await row.getByRole('button', { name: 'Revoke free credits' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke free credits' }).click();
  await page
    .getByTestId('action-done')
    .filter({ hasText: `Took back $${Number(before).toFixed(2)}` })
    .waitFor();
  expect(await balanceOf(referrer.email)).toBe('0.000000');
});

test('codes: a batch is made and downloaded as CSV; the one redeemed is listed as redeemed, by whom', async () => {
  await openAs('support', '/codes');
  await page.getByLabel('How many').fill('3');
  await page.getByLabel('Worth (USD each)').fill('2.5');
  await page.getByLabel('Note').fill('e2e batch');
  await page.getByRole('button', { name: 'Create codes' }).click();
  await page.getByTestId('new-codes').waitFor();
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Download CSV' }).click(),
  ]);
  const csv = fs
    .readFileSync((await download.path())!, 'utf8')
    .trim()
    .split(/\r?\n/);
  // The server's CSV of a batch, made in the page from the answer that showed the codes (they are not kept whole).
  expect(csv[0]).toBe('id,batch,code,amount_usd');
  expect(csv).toHaveLength(4);
  const codes = csv.slice(1).map((l) => l.split(','));
  const batch = codes[0][1];
  for (const [id, inBatch, code, amount] of codes) {
    expect(id).toMatch(/^\d+$/);
    expect(code).toMatch(/^SY-[0-9A-Z]{5}(-[0-9A-Z]{5}){3}$/);
    expect([inBatch, amount]).toEqual([batch, '2.500000']);
  }

  // Someone redeems one in the console; the list shows it redeemed by them, the others unused.
  const user = await registered(gw.url);
  expect((await user.post('/console/api/topup/redeem', { code: codes[0][2] })).status).toBe(200);
  await page.reload();
  const table = page.getByTestId('codes-table');
  await table.getByRole('link', { name: user.email }).waitFor();
  await page.getByLabel('Status').selectOption('unused');
  await page.getByRole('button', { name: 'Filter' }).click();
  await eventually(async () => expect(await table.getByRole('link', { name: user.email }).count()).toBe(0));
});

test('audit log: actions listed with who did them, filtered, and exported as CSV', async () => {
  const c = await customer(0);
  const op = await openAs('admin', '/audit');
  expect((await bearer('POST', `/admin/api/accounts/${c.id}/disable`)).status).toBe(200);
  await page.getByLabel('Target').fill(`account:${c.id}`);
  await page.getByRole('button', { name: 'Filter' }).click();
  const table = page.getByTestId('audit-table');
  // The filtered page replaces the whole log: one record, of this account.
  await eventually(async () => expect(await table.getByRole('row').count()).toBe(2));
  const record = table.getByRole('row').filter({ hasText: `account:${c.id}` });
  await record.getByText('adminDisableAccount').waitFor();
  await record.getByText('admin-token').waitFor();
  await table.getByRole('button', { name: 'Before / after' }).click();
  await page.getByText('"status": "disabled"').waitFor();

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Export CSV' }).click(),
  ]);
  const csv = fs
    .readFileSync((await download.path())!, 'utf8')
    .trim()
    .split(/\r?\n/);
  expect(csv[0]).toBe('id,created_at,actor,address,action,target,before,after');
  expect(csv.slice(1).every((l) => l.includes(`account:${c.id}`))).toBe(true);
  expect(csv.length).toBe(2);
  // The operator's own enrolment is there too, as theirs.
  const mine = (await bearer('GET', `/admin/api/audit?target=operator:${op.id}`)).body.data;
  expect(mine.map((r: { actor: string }) => r.actor)).toContain(`operator:${op.id} ${op.email}`);
});

test('operators: an owner adds one (the password shown once) who can then sign in, and disables them', async () => {
  await openAs('owner', '/operators');
  const email = uniqueEmail('new-support');
  await page.getByRole('button', { name: 'Add operator' }).click();
  const dialog = page.getByRole('dialog', { name: 'Add an operator' });
  await dialog.getByLabel('Email').fill(email);
  await dialog.getByLabel('Role').selectOption('support');
  await dialog.getByRole('button', { name: 'Add operator' }).click();
  const password = (await page.getByTestId('new-operator-password').textContent()) ?? '';
  expect(password).toMatch(/^[\w-]{24}$/);
  await page.getByRole('button', { name: 'Done' }).click();
  const row = page.getByTestId('operators-table').getByRole('row').filter({ hasText: email });
  await row.getByText('Not set up').waitFor();
  const signIn = (pw: string) =>
    fetch(`${gw.url}/admin/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: pw }),
    }).then((r) => r.status);
  expect(await signIn(password)).toBe(200);

  await row.getByRole('button', { name: 'Disable' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Disable' }).click();
  await page
    .getByTestId('action-done')
    .filter({ hasText: `${email} is disabled` })
    .waitFor();
  await row.getByText('Disabled').waitFor();
  expect(await signIn(password)).toBe(401);
});

test('an admin is not shown the Operators page, and opening it says the role may not', async () => {
  await openAs('admin');
  await page.getByRole('link', { name: 'Audit log' }).waitFor();
  expect(await page.getByRole('link', { name: 'Operators' }).count()).toBe(0);
  await page.goto(`${gw.url}/admin/operators`);
  await page.getByTestId('refused').waitFor();
});

test('a viewer sees no grant button, and a grant forged past the page is refused by the server, its 403 shown', async () => {
  const c = await customer(1);
  await openAs('viewer', `/accounts/${c.id}`);
  await page.getByRole('heading', { name: c.email }).waitFor();
  expect(await page.getByRole('button', { name: 'Grant or remove credits' }).count()).toBe(0);
  expect(await page.getByRole('button', { name: 'Suspend' }).count()).toBe(0);

  // The page is told the viewer is a support operator: it offers the grant, and the server refuses it.
  await context.route(`${gw.url}/admin/api/session`, async (route) => {
    if (route.request().method() !== 'GET') return route.continue();
    const res = await route.fetch();
    const body = (await res.json()) as { operator: { role: string } };
    body.operator.role = 'support';
    return route.fulfill({ response: res, json: body });
  });
  await page.reload();
  await page.getByTestId('operator-role').filter({ hasText: 'support' }).waitFor();
  const before = await balanceOf(c.email);
  await page.getByRole('button', { name: 'Grant or remove credits' }).click();
  const dialog = page.getByRole('dialog', { name: 'Grant or remove credits' });
  await dialog.getByLabel('Amount (USD)').fill('100');
  await dialog.getByLabel('Reason').fill('forged');
  await dialog.getByRole('button', { name: 'Grant credits' }).click();
  await dialog
    .getByRole('alert')
    .filter({ hasText: "The role 'viewer' may not call adminGrantCredits: it needs the role 'support'" })
    .waitFor();
  expect(await balanceOf(c.email)).toBe(before);
});

test('the app is served with the console’s headers, loads on any of its paths, and never shadows the admin API', async () => {
  const html = await fetch(`${gw.url}/admin/accounts/42`);
  expect(html.status).toBe(200);
  expect(html.headers.get('content-type')).toMatch(/^text\/html/);
  expect(html.headers.get('cache-control')).toBe('no-cache');
  expect(html.headers.get('content-security-policy')).toContain("default-src 'self'");
  expect(html.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  const asset = (await html.text()).match(/\/admin\/assets\/[\w.-]+\.js/)?.[0];
  expect(asset).toBeDefined();
  const js = await fetch(`${gw.url}${asset}`);
  expect(js.status).toBe(200);
  expect(js.headers.get('cache-control')).toContain('immutable');
  expect((await fetch(`${gw.url}/admin/assets/missing.js`)).status).toBe(404);
  const api = await fetch(`${gw.url}/admin/api/session`);
  expect(api.status).toBe(401);
  expect(api.headers.get('content-type')).toMatch(/^application\/json/);
});

test('keys: found by prefix with their account; disabled (and /v1 refuses it), then a budget and an expiry set', async () => {
  const c = await customer(1);
  const prefix = c.secret.slice(0, 9);
  await openAs('support', `/keys`);
  await page.getByLabel('Key prefix').fill(prefix);
  await page.getByRole('button', { name: 'Find' }).click();
  const row = page.getByTestId('keys-table').getByRole('row').filter({ hasText: c.email });
  // The list shown before the search may hold this key's row too: wait for the search's answer, not the first row.
  await eventually(async () => expect(await page.getByTestId('keys-table').getByRole('row').count()).toBe(2)); // heading, key
  await row.waitFor();

  await row.getByRole('button', { name: 'Disable' }).click();
  await page.getByTestId('action-done').filter({ hasText: 'is disabled' }).waitFor();
  await eventually(async () => expect(await keyStatus(c.secret)).toBe(401));
  await row.getByRole('button', { name: 'Enable' }).click();
  await page.getByTestId('action-done').filter({ hasText: 'is enabled' }).waitFor();
  await eventually(async () => expect(await keyStatus(c.secret)).toBe(200));

  await row.getByRole('button', { name: 'Budget / expiry' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Budget (USD)').fill('3');
  await dialog.getByLabel('Per').selectOption('week');
  await dialog.getByLabel('Expires').fill('2031-01-02T03:04');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await page.getByTestId('action-done').filter({ hasText: 'saved' }).waitFor();
  await row.getByText('$3.00 / week').waitFor();
  const key = (await bearer('GET', `/admin/api/keys?prefix=${prefix}`)).body.data[0];
  expect(key.budget).toMatchObject({ usd: '3.000000', period: 'week' });
  expect(key.expires_at).toBe('2031-01-02T03:04:00.000Z'); // the browser's time zone is UTC
});

test('usage: requests of an account filtered, a receipt opened, the same filter exported as CSV', async () => {
  const c = await customer(3);
  await openAs('support', '/usage');
  await page.getByLabel('Account id').fill(String(c.id));
  await page.getByLabel('Model').fill('mock-chat');
  await page.getByRole('button', { name: 'Apply' }).click();
  const table = page.getByTestId('usage-table');
  await eventually(async () => expect(await table.getByRole('row').count()).toBe(4));
  expect(await table.getByText('mock-chat').count()).toBe(3);

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Export CSV' }).click(),
  ]);
  const csv = fs
    .readFileSync((await download.path())!, 'utf8')
    .trim()
    .split(/\r?\n/);
  expect(csv[0].replace(/"/g, '')).toMatch(
    /^id,request_id,created_at,account_id,key_id,model,provider,endpoint,status,/,
  );
  expect(csv.slice(1).every((l) => l.includes('mock-chat'))).toBe(true);
  expect(csv).toHaveLength(4);

  await table.getByRole('link').first().click();
  await page.waitForURL(/\/admin\/usage\/.+/);
  await page.getByRole('heading', { name: 'Receipt' }).waitFor();
  const charged = (await page.getByTestId('receipt-charge').textContent()) ?? '';
  expect(charged).toMatch(/^\$0\.0000\d+$/);
  await page.getByTestId('receipt').getByText('mock-chat').waitFor();
});

test('overview: spend, requests and top-ups from real traffic, spend by model and provider, every route', async () => {
  // A dearer model whose first route is an upstream that is down: its requests fall back to the mock, and the
  // dead route's errors and breaker show.
  const down = { type: 'openai', base_url: 'http://127.0.0.1:9/v1', credentials: { api_key: 'sk-down-0000' } };
  expect((await bearer('PUT', '/admin/api/catalog/providers/backup', down)).status).toBe(200);
  const pro = {
    kind: 'chat',
    price: { input: 3, output: 15 },
    routes: [{ provider: 'backup', model: 'gpt-pro' }, { provider: 'local' }],
  };
  expect((await bearer('PUT', '/admin/api/catalog/models/mock-pro', pro)).status).toBe(200);
  const [a, b] = [await customer(4), await customer(2)];
  await Promise.all([1, 2].map(() => sdk(b.secret).embeddings.create({ model: 'mock-embedding', input: 'hello' })));
  const long = 'Summarise the operating notes of the gateway for the on-call rota. '.repeat(40);
  for (let i = 0; i < 6; i++) {
    await sdk(a.secret).chat.completions.create({ model: 'mock-pro', messages: [{ role: 'user', content: long }] });
  }
  await gw.settled();
  expect((await bearer('POST', `/admin/api/accounts/${a.id}/credits`, { usd: '25', note: 'welcome' })).status).toBe(
    200,
  );
  await openAs('viewer', '/');
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  const models = page.getByTestId('by-model');
  await models.getByText('mock-chat').waitFor();
  await models.getByText('mock-embedding').waitFor();
  await page.getByTestId('by-provider').getByText('local').waitFor();
  const routes = page.getByTestId('routes');
  await routes.getByRole('row').filter({ hasText: 'mock-chat' }).getByText('Closed').waitFor();
  const dead = routes.getByRole('row').filter({ hasText: 'backup' });
  await dead
    .getByText(/ECONNREFUSED|connect|unreachable|refused/i)
    .first()
    .waitFor();
  // The page says what the API says: the grant above is among the day's top-ups (other tests' too, in one database).
  const { windows } = (await bearer('GET', '/admin/api/overview')).body;
  expect(Number(windows.day.topups_usd)).toBeGreaterThanOrEqual(25);
  const shown = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(
    Number(windows.day.topups_usd),
  );
  await page.getByTestId('window-Last 24 hours').getByText(`${shown} topped up`).waitFor();
  await page.screenshot({ path: path.join(OUT, 'admin-overview.png'), fullPage: true });
  if (process.env.E2E_SCREENSHOT_ADMIN) {
    // The README's picture: down to the end of the routes.
    const box = await routes.boundingBox();
    const height = Math.min(1200, Math.ceil((box?.y ?? 0) + (box?.height ?? 900) + 24));
    await page.setViewportSize({ width: 1440, height }); // the sidebar is as tall as the window
    await page.screenshot({ path: path.resolve(process.env.E2E_SCREENSHOT_ADMIN) });
  }
});

test('catalog: an admin changes a price (charged from the next request) and tests a route; support may only read', async () => {
  const c = await customer(0);
  await openAs('admin', '/catalog');
  const row = page.getByTestId('catalog-models').getByRole('row').filter({ hasText: 'mock-chat' });
  await row.getByRole('button', { name: 'Test route' }).click();
  await row.getByTestId('route-test').filter({ hasText: 'OK' }).waitFor();
  await page.screenshot({ path: path.join(OUT, 'admin-catalog.png'), fullPage: true });

  await row.getByRole('button', { name: 'Edit' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit model mock-chat' });
  const body = JSON.parse(await dialog.getByLabel(/^Model/).inputValue()) as { price: Record<string, number> };
  body.price = { input: 1000, output: 1000 };
  await dialog.getByLabel(/^Model/).fill(JSON.stringify(body, null, 2));
  await dialog.getByRole('button', { name: 'Save' }).click();
  await page.getByTestId('action-done').filter({ hasText: 'Model mock-chat saved' }).waitFor();
  await row.getByText('input 1000').waitFor();
  // The API key of a provider is not the admin's to set: shown as its last characters only.
  await page.getByTestId('catalog-providers').getByRole('button', { name: 'Edit' }).first().click();
  await page.getByText('Only an owner may set or change credentials.').waitFor();
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

  const before = Number(await balanceOf(c.email));
  await chat(c.secret);
  await gw.settled();
  const spent = before - Number(await balanceOf(c.email));
  expect(spent).toBeGreaterThan(0.005); // a few tokens at 1000 USD per million, not at 0.15

  // Put it back (the other tests' prices), then support: the same page without Edit or Test.
  body.price = { input: 0.15, output: 0.6 };
  expect((await bearer('PUT', '/admin/api/catalog/models/mock-chat', body)).status).toBe(200);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${gw.url}/admin/login`);
  await openAs('support', '/catalog');
  await page.getByTestId('catalog-models').getByText('mock-chat').waitFor();
  expect(await page.getByRole('button', { name: 'Edit' }).count()).toBe(0);
  expect(await page.getByRole('button', { name: 'Test route' }).count()).toBe(0);
});

test("OpenID Connect: the sign-in page offers the provider, and its user comes back signed in with their group's role", async () => {
  const issuer = `http://127.0.0.1:${await freePort()}`;
  const secret = 'oidc-client-secret-for-the-e2e-0123456789';
  const sso = await startGateway(
    `${CONFIG}admin:\n  oidc: { issuer: "${issuer}", client_id: e2e, client_secret: "${secret}", label: Test IdP, scopes: [openid, email, profile, groups], roles: { sy-support: support } }\n`,
    { ...process.env, ADMIN_TOKEN, SWITCHYARD_SECRET_KEY },
  );
  let idp: ChildProcess | undefined;
  try {
    idp = await startProvider(new URL(issuer).port, `${sso.url}/admin/api/session/oidc/callback`, secret);
    origins = [sso.url, issuer];
    await page.goto(`${sso.url}/admin/login`);
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    // The provider's own page: its form is filled as its user would (this provider takes the claims as given).
    await page.waitForURL(`${issuer}/interaction/**`);
    const email = uniqueEmail('sso');
    const claims = { sub: `sub-${email}`, email, groups: 'sy-support,other' };
    const form = page.locator('form');
    for (const [name, value] of Object.entries(claims)) {
      await form.evaluate(
        (f, [n, v]) => f.insertAdjacentHTML('beforeend', `<input type="hidden" name="${n}" value="${v}">`),
        [name, value],
      );
    }
    await form.evaluate((f) => (f as unknown as { submit(): void }).submit());
    await page.waitForURL(`${sso.url}/admin/`);
    await page.getByTestId('operator-role').filter({ hasText: 'support' }).waitFor();
    await page.getByText(email).first().waitFor();
  } finally {
    idp?.kill();
    await sso.close();
  }
});

/** The OpenID provider of test/fakes (oidc-provider in a child process), up once it says so. */
function startProvider(port: string, redirectUri: string, secret: string): Promise<ChildProcess> {
  const script = path.join(ROOT, 'test', 'fakes', 'oidcProvider.mjs');
  const child = spawn(process.execPath, [script, port, redirectUri, 'e2e', secret], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).startsWith('ready') && resolve(child));
    child.once('exit', (code) => reject(new Error(`the OpenID provider exited (${code}): ${err}`)));
  });
}

test('accounts: the confirmation mailed again to an unconfirmed account; a debt forgiven with a reason', async () => {
  const unconfirmed = new ConsoleClient(gw.url);
  const email = uniqueEmail('unconfirmed');
  expect((await unconfirmed.register(email, PASSWORD, undefined, { verify: false })).status).toBe(201);
  const id = unconfirmed.account.id as number;
  // What a card payment taken back after its credits were spent leaves (webhooks are not this test's subject).
  await gw.app.db('accounts').where('id', id).update({ debt_micros: 2_500_000, status: 'disabled' });
  await openAs('support', `/accounts/${id}`);
  await page.getByRole('heading', { name: email }).waitFor();

  const mails = () => gw.mails.filter((m) => m.to === email).length;
  const before = mails();
  await page.getByRole('button', { name: 'Resend confirmation' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Resend confirmation' }).click();
  await page
    .getByTestId('action-done')
    .filter({ hasText: `sent to ${email} again` })
    .waitFor();
  expect(mails()).toBe(before + 1);

  await page.getByRole('button', { name: 'Settle debt' }).click();
  const dialog = page.getByRole('dialog', { name: 'Settle the debt' });
  await dialog.getByRole('button', { name: 'Forgive' }).click();
  await dialog.getByLabel('Reason').fill('Disputed in error; the bank confirmed');
  await dialog.getByRole('button', { name: 'Settle debt' }).click();
  await page
    .getByTestId('action-done')
    .filter({ hasText: 'Forgave $2.50 of the debt; $0.00 is still owed.' })
    .waitFor();
  await page.getByTestId('account-ledger').getByText('Disputed in error; the bank confirmed').waitFor();
  expect(await page.getByRole('button', { name: 'Settle debt' }).count()).toBe(0);
});

test('catalog: an owner adds a provider with an API key, shown from then on as its last 4 characters only', async () => {
  const key = `sk-e2e-provider-secret-${crypto.randomBytes(6).toString('hex')}`;
  await openAs('owner', '/catalog');
  await page.getByRole('button', { name: 'Add provider' }).click();
  const dialog = page.getByRole('dialog', { name: 'Add a provider' });
  await dialog.getByLabel('Name').fill('e2e-upstream');
  await dialog.getByLabel('Type').fill('openai');
  await dialog.getByLabel('Base URL').fill('http://127.0.0.1:9/v1');
  await dialog.getByLabel('API key').fill(key);
  await dialog.getByRole('button', { name: 'Save' }).click();
  await page.getByTestId('action-done').filter({ hasText: 'Provider e2e-upstream saved.' }).waitFor();
  const row = page.getByTestId('catalog-providers').getByRole('row').filter({ hasText: 'e2e-upstream' });
  await row.getByText(`…${key.slice(-4)}`).waitFor();
  // Edited again: the stored key is named by its end, the field is empty (write-only), and saving keeps it.
  await row.getByRole('button', { name: 'Edit' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit provider e2e-upstream' });
  await edit.getByText(`Stored: …${key.slice(-4)}. Leave empty to keep it.`).waitFor();
  expect(await edit.getByLabel('API key').inputValue()).toBe('');
  await edit.getByRole('button', { name: 'Save' }).click();
  await row.getByText(`…${key.slice(-4)}`).waitFor();
  expect(await page.content()).not.toContain(key);
  const catalog = await bearer('GET', '/admin/api/catalog');
  expect(JSON.stringify(catalog.body)).not.toContain(key);
});

test('an operator changes their own password; the old one no longer signs in', async () => {
  const op = await openAs('viewer', '/me');
  const next = `a new passphrase for ${crypto.randomBytes(4).toString('hex')} the rota`;
  await page.getByLabel('Current password').fill('not it');
  await page.getByLabel('New password').fill(next);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('alert').waitFor();
  await page.getByLabel('Current password').fill(op.password);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByText('Your password is changed.').waitFor();
  const signIn = async (password: string, code?: string) =>
    (
      await fetch(`${gw.url}/admin/api/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: op.email, password, code }),
      })
    ).status;
  expect(await signIn(op.password, '000000')).toBe(401); // refused for the password (a code is not even looked at)
  expect(await signIn(next, await op.code())).toBe(200);
});
