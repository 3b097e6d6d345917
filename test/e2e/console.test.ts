/**
 * The web console end to end, in headless Chromium (Debian's `chromium`, driven by playwright-core) against a real
 * gateway on loopback with a mock model: register with a referral code and see 21 USD, create a key and read its
 * secret off the page, call /v1 with it through the official `openai` SDK, see the usage, disable the key and see
 * /v1 refuse it, redeem a code and see the balance change. The page may reach nothing but the gateway.
 *
 * Every test has its own browser context (cookies, page) and its own account, made in the test through the console
 * API, so a test never depends on what another one did or whether it passed. Waits are for the state a test then
 * asserts (the URL after a client-side redirect, a given text), never for something that shows up before it.
 *
 * Needs the built console (`make build`; `make e2e` builds first) and /usr/bin/chromium (or CHROMIUM_PATH).
 * Screenshots go to .tmp/e2e/; with E2E_SCREENSHOT=docs/console.png the dashboard is also saved there (the README's).
 */
import fs from 'node:fs';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CONSOLE_DIST } from '../../src/http/consoleStatic';
import { mailedToken, startGateway, type TestGateway } from '../helpers/app';
import { wav } from '../helpers/audio';

// Run inside the page by page.evaluate (the tests' own TypeScript has no DOM library).
declare const document: any; // eslint-disable-line @typescript-eslint/no-explicit-any
declare function getComputedStyle(el: unknown): { color: string; backgroundImage: string };

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN_TOKEN = 'e2e-admin-token';
const OUT = path.join(__dirname, '..', '..', '.tmp', 'e2e');
const PASSWORD = 'correct horse 42';

jest.setTimeout(180_000);

let gw: TestGateway;
let browser: Browser;
// One of each per test (beforeEach).
let context: BrowserContext;
let page: Page;
let outside: string[] = [];
let pageErrors: string[] = [];

beforeAll(async () => {
  if (!fs.existsSync(path.join(CONSOLE_DIST, 'index.html')))
    throw new Error(`the console is not built (${CONSOLE_DIST}): run make build`);
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  fs.mkdirSync(OUT, { recursive: true });
  gw = await startGateway(
    `
providers: { local: { type: mock } }
models:
  - { id: mock-chat, kind: chat, owned_by: switchyard, price: { input: 0.15, output: 0.60 }, routes: [ { provider: local } ] }
  - { id: mock-embedding, kind: embedding, owned_by: switchyard, price: { input: 0.02 }, routes: [ { provider: local } ] }
  - id: mock-image
    kind: image
    owned_by: switchyard
    price: { images: { 1024x1024/standard: 0.04, 1024x1024/hd: 0.08, 1792x1024/hd: 0.12 } }
    routes: [ { provider: local } ]
  - { id: mock-tts, kind: speech, owned_by: switchyard, price: { characters: 15 }, routes: [ { provider: local } ] }
  - { id: mock-moderation, kind: moderation, owned_by: switchyard, routes: [ { provider: local } ] }
  - { id: mock-transcribe, kind: transcription, owned_by: switchyard, price: { audio_seconds: 100 }, routes: [ { provider: local } ] }
  - { id: mock-rerank, kind: rerank, owned_by: switchyard, price: { search_unit: 2000 }, routes: [ { provider: local } ] }
`,
    { ...process.env, ADMIN_TOKEN },
  );
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
  pageErrors = [];
  context = await browser.newContext({
    viewport: { width: 1440, height: 900 },
    deviceScaleFactor: 2,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gw.url });
  // Anything but the gateway is refused and remembered: the console must work without any other network.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${gw.url}/`) || url.startsWith('data:')) return route.continue();
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

const email = (who: string) => `${who}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}@example.com`;

interface Account {
  email: string;
  csrf: string;
}

/**
 * A new account, registered through the console API from this test's browser context: the session cookie lands in
 * the context, so its page is signed in as this account.
 */
async function register(who = 'user'): Promise<Account> {
  const address = email(who);
  const res = await context.request.post(`${gw.url}/console/api/register`, {
    data: { email: address, password: PASSWORD },
  });
  expect(res.status()).toBe(201);
  await confirm(address);
  return { email: address, csrf: ((await res.json()) as { csrf_token: string }).csrf_token };
}

/** Opens the confirmation link mailed to `address` (outside the browser): the sign-up credits arrive. */
async function confirm(address: string): Promise<void> {
  const token = mailedToken(gw.mails, address, '/console/verify');
  const res = await fetch(`${gw.url}/console/api/verify-email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  expect(res.status).toBe(200);
}

/** Opens a console page as a signed-in account (a new one unless given) and waits for the signed-in shell. */
async function openSignedIn(pathname: string, account?: Account): Promise<Account> {
  const a = account ?? (await register());
  await page.goto(`${gw.url}/console${pathname}`);
  await page.getByTestId('sidebar-balance').waitFor();
  return a;
}

/** An API key of the account, created through the console API. */
async function createKey(
  account: Account,
  body: { name: string; quota_usd?: string },
): Promise<{ secret: string; prefix: string }> {
  const res = await context.request.post(`${gw.url}/console/api/keys`, {
    data: body,
    headers: { 'x-csrf-token': account.csrf },
  });
  expect(res.status()).toBe(201);
  const { key, secret } = (await res.json()) as { key: { prefix: string }; secret: string };
  return { secret, prefix: key.prefix };
}

const sdk = (secret: string) => new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });

async function text(testId: string): Promise<string> {
  return (await page.getByTestId(testId).textContent())?.trim() ?? '';
}

const balanceText = () => text('balance');

async function apiBalance(): Promise<string> {
  return page.evaluate(async () => {
    const res = await fetch('/console/api/account');
    return ((await res.json()) as { balance_usd: string }).balance_usd;
  });
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

const usd = (s: string) => new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(Number(s));

test('registering with a referral code: 21 USD on the dashboard once the mailed link is opened', async () => {
  // The referrer registers (and confirms its address) through the API, outside the browser; the new user follows
  // the referrer's link.
  const referrerEmail = email('referrer');
  const res = await fetch(`${gw.url}/console/api/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: referrerEmail, password: PASSWORD }),
  });
  expect(res.status).toBe(201);
  await confirm(referrerEmail);
  const referrer = (await res.json()) as { account: { referral_code: string; referral_link: string } };
  const link = new URL(referrer.account.referral_link);
  expect(link.pathname).toBe('/console/register');

  // A signed-out visitor is sent to the log-in page. The log-in form is drawn before the address changes (the
  // redirect is a history.replaceState after the render), so wait for the address itself.
  await page.goto(`${gw.url}/console/`);
  await page.waitForURL(`${gw.url}/console/login`);
  await page.getByRole('heading', { name: 'Welcome back' }).waitFor();

  // An unknown code is refused inline, naming it.
  const userEmail = email('ada');
  await page.goto(`${gw.url}/console/register?ref=NOSUCHCODE`);
  await page.getByLabel('Email').fill(userEmail);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.locator('.field.has-error').filter({ hasText: 'NOSUCHCODE' }).waitFor();

  await page.goto(`${gw.url}${link.pathname}${link.search}`);
  await page.getByText('You were invited').waitFor();
  await expect(page.getByLabel('Referral code').inputValue()).resolves.toBe(referrer.account.referral_code);
  await page.getByLabel('Email').fill(userEmail);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();

  await page.waitForURL(`${gw.url}/console/`);
  // Nothing yet: the credits wait for the address; the console says where the link went.
  await page.getByTestId('confirm-banner').filter({ hasText: userEmail }).waitFor();
  await eventually(async () => expect(await balanceText()).toBe('$0.00'));
  // The user opens the mailed link in the same browser.
  await page.goto(`${gw.url}/console/verify?token=${mailedToken(gw.mails, userEmail, '/console/verify')}`);
  await page.getByTestId('verified').waitFor();
  await page.getByRole('link', { name: 'Go to the dashboard' }).click();
  await page.waitForURL(`${gw.url}/console/`);
  await eventually(async () => expect(await balanceText()).toBe('$21.00'));
  expect(await page.getByTestId('confirm-banner').count()).toBe(0);
  await expect(page.getByTestId('referral-link').inputValue()).resolves.toMatch(/\/console\/register\?ref=\w+$/);
  await page.getByText('$20.00 from referrals').waitFor();
  await page.screenshot({ path: path.join(OUT, 'dashboard-new.png') });
});

test('a key created in the console works with the openai SDK, and its usage shows up', async () => {
  await openSignedIn('/');
  await page.getByRole('link', { name: 'API keys' }).first().click();
  await page.getByRole('heading', { name: 'No API keys yet' }).waitFor();
  await page.getByRole('button', { name: 'Create key' }).first().click();
  const dialog = page.getByRole('dialog', { name: 'Create an API key' });
  await dialog.getByLabel('Name').fill('e2e app');
  await dialog.getByLabel('Spending limit (USD)').fill('5');
  await dialog.getByRole('button', { name: 'Create key' }).click();

  const shown = page.getByTestId('new-secret');
  await shown.waitFor();
  const secret = ((await shown.textContent()) ?? '').trim();
  expect(secret).toMatch(/^sk-[A-Za-z0-9]{48}$/);
  await page.getByRole('dialog', { name: 'Save your new key' }).getByRole('button', { name: 'Copy' }).click();
  await page.getByRole('button', { name: 'Copied' }).waitFor();
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
  await page.screenshot({ path: path.join(OUT, 'keys-secret.png') });
  await page.getByRole('button', { name: 'I have saved it' }).click();
  await shown.waitFor({ state: 'detached' });

  const row = page.locator('tr', { hasText: 'e2e app' });
  await row.getByText('Active').waitFor();
  await row.getByText('/ $5.00').waitFor();
  const keyPrefix = (await row.getAttribute('data-key-prefix')) ?? '';
  expect(keyPrefix).not.toBe('');
  expect(secret.startsWith(keyPrefix)).toBe(true);

  const client = sdk(secret);
  const chat = await client.chat.completions.create({
    model: 'mock-chat',
    messages: [{ role: 'user', content: 'Hello from the browser test' }],
  });
  expect(chat.choices[0].message.content).toContain('Hello from the browser test');
  const emb = await client.embeddings.create({ model: 'mock-embedding', input: 'vector me' });
  expect(emb.data).toHaveLength(1);

  await page.getByRole('link', { name: 'Usage' }).first().click();
  await page.waitForURL(`${gw.url}/console/usage`);
  const table = page.getByTestId('usage-table');
  await eventually(
    async () => {
      await page.reload();
      await page.locator('[data-testid=usage-table], .empty').first().waitFor();
      expect(await table.locator('tbody tr').count()).toBe(2);
    },
    15_000,
    500,
  );
  await table.locator('tr', { hasText: 'mock-chat' }).getByText('e2e app').waitFor();
  await table.locator('tr', { hasText: 'mock-embedding' }).waitFor();
  const totals = page.getByTestId('usage-totals');
  await totals.locator('tr', { hasText: 'mock-chat' }).waitFor();
  await totals.getByText('All models').waitFor();

  // The key filter narrows the list; a range in the past finds nothing.
  await page.getByLabel('Key', { exact: true }).selectOption({ label: `e2e app (${keyPrefix}…)` });
  await page.getByRole('button', { name: 'Apply' }).click();
  await eventually(async () => expect(await table.locator('tbody tr').count()).toBe(2));
  await page.getByLabel('From').fill('2020-01-01');
  await page.getByLabel('To').fill('2020-01-31');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.getByRole('heading', { name: 'No requests match these filters' }).waitFor();
  await page.getByRole('button', { name: 'Clear' }).click();
  await table.waitFor();
  await page.screenshot({ path: path.join(OUT, 'usage.png') });
});

test('usage pages through next_cursor', async () => {
  const account = await register();
  const { secret } = await createKey(account, { name: 'pager' });
  const client = sdk(secret);
  // 26 requests at 25 a page: the second page holds the oldest one.
  for (let i = 0; i < 25; i++)
    await client.chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: `request ${i}` }] });
  await client.embeddings.create({ model: 'mock-embedding', input: 'the 26th' });

  await openSignedIn('/usage', account);
  const table = page.getByTestId('usage-table');
  await eventually(
    async () => {
      await page.reload();
      await page.locator('[data-testid=usage-table], .empty').first().waitFor();
      await page.getByText('Page 1').waitFor({ timeout: 1000 });
    },
    15_000,
    500,
  );
  await eventually(async () => expect(await table.locator('tbody tr').count()).toBe(25));
  await page.getByRole('button', { name: 'Next' }).click();
  await page.getByText('Page 2').waitFor();
  await eventually(async () => expect(await table.locator('tbody tr').count()).toBe(1));
  await expect(page.getByRole('button', { name: 'Next' }).isDisabled()).resolves.toBe(true);
  await page.getByRole('button', { name: 'Previous' }).click();
  await page.getByText('Page 1').waitFor();
  await eventually(async () => expect(await table.locator('tbody tr').count()).toBe(25));
  await page
    .getByTestId('usage-totals')
    .locator('tr', { hasText: 'mock-chat' })
    .getByText('25', { exact: true })
    .waitFor();
});

test('each model priced in its own unit, and what it used counted in it', async () => {
  const account = await register();
  const { secret } = await createKey(account, { name: 'units' });
  const client = sdk(secret);
  await client.images.generate({ model: 'mock-image', prompt: 'a fox', n: 3, size: '1024x1024', quality: 'standard' });
  await (
    await client.audio.speech.create({ model: 'mock-tts', voice: 'alloy', input: 'x'.repeat(1200) })
  ).arrayBuffer();
  for (const input of ['one', 'two']) await client.moderations.create({ model: 'mock-moderation', input });
  await client.audio.transcriptions.create({ model: 'mock-transcribe', file: await toFile(wav(42), 'talk.wav') });
  const rerank = await fetch(`${gw.url}/v1/rerank`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock-rerank', query: 'q', documents: ['a', 'b'] }),
  });
  expect(rerank.status).toBe(200);

  // The dashboard's model list: each price in the unit it is billed in; nothing priced is free.
  await openSignedIn('/', account);
  const prices = {
    'mock-chat': '$0.15 / $0.60 per 1M tokens',
    'mock-embedding': '$0.02 / 1M tokens',
    'mock-image': '$0.04–$0.12 / image',
    'mock-tts': '$15 / 1M characters',
    'mock-moderation': 'Free',
    'mock-rerank': '$2 / 1K search units',
    'mock-transcribe': '$0.006 / minute',
  };
  for (const [model, price] of Object.entries(prices))
    await eventually(async () => expect(await text(`price-${model}`)).toBe(price));
  // The last 14 days, by class in its unit (input tokens are counted too: the reranker's pairs).
  await eventually(
    async () => {
      await page.reload();
      const used = await text('period-usage');
      for (const q of ['3 images', '1,200 characters', '2 requests', '1 search unit', '42 s'])
        expect(used).toContain(q);
    },
    15_000,
    500,
  );
  await page.screenshot({ path: path.join(OUT, 'dashboard-units.png') });

  // The usage page: a column per class used, each count in its unit; a chat-only column of zeros is not there.
  await page.getByRole('link', { name: 'Usage' }).first().click();
  const table = page.getByTestId('usage-table');
  await eventually(async () => expect(await table.locator('tbody tr').count()).toBe(6));
  const heads = await table.locator('thead th').allTextContents();
  expect(heads).toEqual(
    expect.arrayContaining(['Generated images', 'Input characters', 'Moderation requests', 'Audio seconds']),
  );
  await table.locator('tr', { hasText: 'mock-transcribe' }).getByText('42 s', { exact: true }).waitFor();
  await table.locator('tr', { hasText: 'mock-image' }).getByText('3 images', { exact: true }).waitFor();
  await table.locator('tr', { hasText: 'mock-tts' }).getByText('1,200 characters', { exact: true }).waitFor();
  await table.locator('tr', { hasText: 'mock-rerank' }).getByText('1 search unit', { exact: true }).waitFor();
  const totals = page.getByTestId('usage-totals');
  await totals.locator('tr', { hasText: 'mock-moderation' }).getByText('2 requests', { exact: true }).waitFor();
  await page.screenshot({ path: path.join(OUT, 'usage-units.png') });
});

test('a key disabled in the console is refused by /v1', async () => {
  const account = await register();
  const { secret } = await createKey(account, { name: 'e2e app' });
  const client = sdk(secret);
  const status = async () => {
    try {
      await client.chat.completions.create({
        model: 'mock-chat',
        messages: [{ role: 'user', content: 'still there?' }],
      });
      return 200;
    } catch (e) {
      return e instanceof OpenAI.APIError ? e.status : -1;
    }
  };
  expect(await status()).toBe(200);

  await openSignedIn('/keys', account);
  const row = page.locator('tr', { hasText: 'e2e app' });
  await row.getByText('Active').waitFor();
  await row.getByRole('switch').click();
  await row.locator('.toggle-text').getByText('Disabled').waitFor();
  await row.getByTestId('key-blocked').getByText('Disabled').waitFor(); // the row says why, in the API's reason words
  await expect(row.getByRole('switch').getAttribute('aria-checked')).resolves.toBe('false');
  await eventually(async () => expect(await status()).toBe(401));

  // The state survives a reload: it is the server's, not the page's.
  await page.reload();
  await row.locator('.toggle-text').getByText('Disabled').waitFor();
  await expect(row.getByRole('switch').getAttribute('aria-checked')).resolves.toBe('false');

  // The refused calls are on the Usage page in the same words, and in its per-day view (the counts are written every
  // few seconds: here at once).
  for (let i = 0; i < 3; i++) expect(await status()).toBe(401);
  await gw.app.refusals.flush();
  await page.goto(`${gw.url}/console/usage`);
  const said = page.getByTestId('refused-summary').locator('li', { hasText: 'refused: the key is disabled.' });
  await said.waitFor();
  const refused = Number(/(\d+) calls refused/.exec((await said.textContent()) ?? '')?.[1]);
  expect(refused).toBeGreaterThanOrEqual(4);
  await page.getByTestId('refused-table').getByRole('cell', { name: 'e2e app' }).first().waitFor();
  const today = page.getByTestId('usage-daily').locator('tbody tr').first();
  await expect(today.locator('td[data-label="Refused"]').textContent()).resolves.toBe(String(refused));
});

test('a key is renamed, limited to a model and a scope, then deleted', async () => {
  const account = await register();
  await createKey(account, { name: 'e2e app' }); // a bystander: it must outlive the other key's deletion
  await openSignedIn('/keys', account);
  await page.locator('tr', { hasText: 'e2e app' }).waitFor();

  await page.getByRole('button', { name: 'Create key' }).first().click();
  let dialog = page.getByRole('dialog', { name: 'Create an API key' });
  await dialog.getByLabel('Name').fill('second');
  await dialog.getByRole('button', { name: 'Create key' }).click();
  const shown = page.getByTestId('new-secret');
  await shown.waitFor();
  const second = ((await shown.textContent()) ?? '').trim();
  expect(second).toMatch(/^sk-[A-Za-z0-9]{48}$/);
  await page.getByRole('button', { name: 'I have saved it' }).click();

  await page.getByRole('button', { name: 'Edit second' }).click();
  dialog = page.getByRole('dialog', { name: 'Edit second' });
  await dialog.getByLabel('Name').fill('chat only');
  await dialog.getByLabel('All models, including ones added later').uncheck();
  await dialog.getByRole('checkbox', { name: /mock-chat/ }).check();
  for (const scope of ['Completions (legacy)', 'Embeddings', 'List models'])
    await dialog.getByRole('checkbox', { name: scope }).uncheck();
  await dialog.getByRole('button', { name: 'Save changes' }).click();
  await dialog.waitFor({ state: 'detached' });
  const row = page.locator('tr', { hasText: 'chat only' });
  await row.locator('.badge', { hasText: 'mock-chat' }).waitFor();
  await row.locator('.badge', { hasText: /^chat$/ }).waitFor();

  const client = sdk(second);
  const chat = await client.chat.completions.create({
    model: 'mock-chat',
    messages: [{ role: 'user', content: 'ok' }],
  });
  expect(chat.choices).toHaveLength(1);
  await expect(client.embeddings.create({ model: 'mock-embedding', input: 'x' })).rejects.toMatchObject({
    status: 403,
  });

  // Deleting asks first; Cancel keeps the key.
  await row.getByRole('button', { name: 'Delete chat only' }).click();
  await page.getByRole('dialog', { name: 'Delete this key?' }).getByRole('button', { name: 'Cancel' }).click();
  await page.getByRole('dialog', { name: 'Delete this key?' }).waitFor({ state: 'detached' });
  await row.waitFor();
  await row.getByRole('button', { name: 'Delete chat only' }).click();
  await page.getByRole('dialog', { name: 'Delete this key?' }).getByRole('button', { name: 'Delete key' }).click();
  await row.waitFor({ state: 'detached' });
  await eventually(async () => {
    await expect(
      client.chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: 'gone?' }] }),
    ).rejects.toMatchObject({ status: 401 });
  });
  await page.reload();
  await page.locator('tr', { hasText: 'e2e app' }).waitFor();
  await expect(page.locator('tr', { hasText: 'chat only' }).count()).resolves.toBe(0);
});

test("a key's budget and expiry, the low-balance alert, and the confirmation link again, from the console", async () => {
  // Not confirmed yet: the banner says where the link went and sends it again.
  const address = email('unconfirmed');
  const res = await context.request.post(`${gw.url}/console/api/register`, {
    data: { email: address, password: PASSWORD },
  });
  expect(res.status()).toBe(201);
  const account = { email: address, csrf: ((await res.json()) as { csrf_token: string }).csrf_token };
  const first = mailedToken(gw.mails, address, '/console/verify');
  await openSignedIn('/', account);
  await page.getByTestId('confirm-banner').filter({ hasText: address }).waitFor();
  await page.getByRole('button', { name: 'Send the link again' }).click();
  await page.getByTestId('confirm-banner').getByText('Sent again.').waitFor();
  expect(mailedToken(gw.mails, address, '/console/verify')).not.toBe(first);
  await confirm(address);

  // A budget per week and an expiry, set in the key dialog: shown on the row, applied by /v1.
  await createKey(account, { name: 'budgeted' });
  await page.goto(`${gw.url}/console/keys`);
  await page.getByRole('button', { name: 'Edit budgeted' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit budgeted' });
  await dialog.getByLabel('Budget (USD)').fill('0.000001');
  await dialog.getByLabel('Budget period').selectOption('week');
  const nextYear = `${new Date().getUTCFullYear() + 1}-01-31`;
  await dialog.getByLabel('Expires (UTC)').fill(nextYear);
  await dialog.getByRole('button', { name: 'Save changes' }).click();
  await dialog.waitFor({ state: 'detached' });
  const row = page.locator('tr', { hasText: 'budgeted' });
  await row.getByTestId('key-budget').filter({ hasText: 'this week' }).waitFor();
  await row
    .getByTestId('key-expiry')
    .filter({ hasText: `Expires ${nextYear}` })
    .waitFor();
  const keys = (await (await context.request.get(`${gw.url}/console/api/keys`)).json()) as {
    data: { name: string; expires_at: string; budget: { usd: string; period: string } }[];
  };
  expect(keys.data.find((k) => k.name === 'budgeted')).toMatchObject({
    expires_at: `${nextYear}T00:00:00.000Z`,
    budget: { usd: '0.000001', period: 'week' },
  });

  // The low-balance alert on the Top up page.
  await page.getByRole('link', { name: 'Top up' }).first().click();
  await page.getByLabel('Low-balance alert (USD)').fill('0.50');
  await page.locator('form.low-balance').getByRole('button', { name: 'Save' }).click();
  await page.getByText('We will mail you when your balance falls below $0.50.').waitFor();
  await page.reload();
  await expect(page.getByLabel('Low-balance alert (USD)').inputValue()).resolves.toBe('0.5');
});

test('redeeming a code adds it to the balance', async () => {
  const res = await fetch(`${gw.url}/admin/api/redemption-codes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ count: 1, usd: '10' }),
  });
  expect(res.status).toBe(201);
  const { codes } = (await res.json()) as { codes: { code: string }[] };

  // Some usage first, so that the dashboard's chart at the end has something to show.
  const account = await register();
  const client = sdk((await createKey(account, { name: 'e2e app' })).secret);
  for (let i = 0; i < 3; i++)
    await client.chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: `request ${i}` }] });
  await client.embeddings.create({ model: 'mock-embedding', input: 'vector me' });

  await openSignedIn('/', account);
  await page.getByRole('link', { name: 'Top up' }).first().click();
  await page.getByRole('heading', { name: 'Redeem a code' }).waitFor();
  const before = await apiBalance();
  await eventually(async () => expect(await text('topup-balance')).toBe(usd(before)));
  // Card payments are not configured here: the card form is absent, not broken.
  await expect(page.getByRole('heading', { name: 'Pay by card' }).count()).resolves.toBe(0);

  await page.getByLabel('Code', { exact: true }).fill('NOT-A-REAL-CODE');
  await page.getByRole('button', { name: 'Redeem code' }).click();
  await page.locator('.field.has-error').waitFor();

  await page.getByLabel('Code', { exact: true }).fill(codes[0].code);
  await page.getByRole('button', { name: 'Redeem code' }).click();
  await page.getByText('$10.00 added to your balance.').waitFor();
  const after = await apiBalance();
  expect(Number(after) - Number(before)).toBeCloseTo(10, 6);
  await eventually(async () => expect(await text('topup-balance')).toBe(usd(after)));
  await eventually(async () => expect(await text('sidebar-balance')).toBe(usd(after)));
  await page.locator('tr', { hasText: 'Code redeemed' }).getByText('+$10.00').waitFor();

  // The same code a second time is refused, with the server's message shown inline.
  await page.getByLabel('Code', { exact: true }).fill(codes[0].code);
  await page.getByRole('button', { name: 'Redeem code' }).click();
  await page.locator('.field.has-error').waitFor();
  expect(await apiBalance()).toBe(after);
  await page.screenshot({ path: path.join(OUT, 'topup.png') });

  await page.getByRole('link', { name: 'Dashboard' }).first().click();
  await eventually(async () => expect(await balanceText()).toBe(usd(after)));
  await page.getByText('Usage, last 14 days').waitFor();
  await page.locator('.chart svg').waitFor();
  await page.waitForTimeout(200);
  await page.screenshot({ path: path.join(OUT, 'dashboard.png') });
  if (process.env.E2E_SCREENSHOT) {
    // The README's picture: down to the end of the chart row.
    const row = await page.locator('.grid-2-1').boundingBox();
    const height = Math.min(900, Math.ceil((row?.y ?? 0) + (row?.height ?? 900) + 16));
    await page.screenshot({
      path: path.resolve(process.env.E2E_SCREENSHOT),
      clip: { x: 0, y: 0, width: 1440, height },
    });
  }
});

test('log out, then log in again: back on the page asked for (only a console page)', async () => {
  const account = await openSignedIn('/');
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(`${gw.url}/console/login`);
  await page.getByRole('heading', { name: 'Welcome back' }).waitFor();
  await page.goto(`${gw.url}/console/usage?key_id=1`);
  await page.waitForURL(`${gw.url}/console/login?next=%2Fusage%3Fkey_id%3D1`);
  await page.getByRole('heading', { name: 'Welcome back' }).waitFor();

  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password', { exact: true }).fill('wrong password 1');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').filter({ hasText: 'Invalid email or password' }).waitFor();

  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(`${gw.url}/console/usage?key_id=1`);
  await page.getByRole('heading', { name: 'Usage', exact: true }).waitFor();

  // another site, or a scheme-relative one, is never where a log-in leads
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(`${gw.url}/console/login`);
  await page.goto(`${gw.url}/console/login?next=${encodeURIComponent('//evil.example/x')}`);
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(`${gw.url}/console/`);
  await eventually(async () => expect(await balanceText()).toMatch(/^\$\d+\.\d\d$/));
});

test('the console is served with the right headers and never shadows the API', async () => {
  const html = await fetch(`${gw.url}/console/usage`);
  expect(html.status).toBe(200);
  expect(html.headers.get('content-type')).toMatch(/^text\/html/);
  expect(html.headers.get('cache-control')).toBe('no-cache');
  expect(html.headers.get('content-security-policy')).toContain("default-src 'self'");
  const asset = (await html.text()).match(/\/console\/assets\/[\w.-]+\.js/)?.[0];
  expect(asset).toBeDefined();
  const js = await fetch(`${gw.url}${asset}`);
  expect(js.status).toBe(200);
  expect(js.headers.get('cache-control')).toContain('immutable');
  expect((await fetch(`${gw.url}/console/assets/missing.js`)).status).toBe(404);
  const api = await fetch(`${gw.url}/console/api/session`);
  expect(api.status).toBe(401);
  expect(api.headers.get('content-type')).toMatch(/^application\/json/);
  expect((await api.json()) as object).toHaveProperty('error.type');
});

/** WCAG's contrast ratio of two `rgb(...)` colours. */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    const [r, g, b2] = (c.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((v) => {
      const s = Number(v) / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b2;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

describe('as a new user meets it (issue 22)', () => {
  test('the low-balance alert on the purple card is readable (AA) and clear of the row above, on desktop and at 390 px', async () => {
    await openSignedIn('/topup');
    for (const width of [1440, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.locator('.low-balance .field-label').waitFor();
      const found = await page.evaluate(() => {
        const panel = document.querySelector('.balance-panel')!;
        // every colour stop of the card's gradient: the text must be readable on the lightest of them
        const stops = getComputedStyle(panel).backgroundImage.match(/rgba?\([^)]*\)/g) ?? [];
        const color = (sel: string) => getComputedStyle(document.querySelector(sel)!).color;
        const label = document.querySelector('.low-balance .field-label')!.getBoundingClientRect();
        const facts = document.querySelector('.balance-facts')!.getBoundingClientRect();
        return {
          stops,
          label: color('.low-balance .field-label'),
          hint: color('.low-balance .field-hint'),
          gap: label.top - facts.bottom,
        };
      });
      expect(found.stops.length).toBeGreaterThanOrEqual(3);
      for (const stop of found.stops) {
        expect(contrast(found.label, stop)).toBeGreaterThanOrEqual(4.5);
        expect(contrast(found.hint, stop)).toBeGreaterThanOrEqual(4.5);
      }
      expect(found.gap).toBeGreaterThanOrEqual(12);
    }
  });

  test('"Add credits" without Stripe says where codes come from, with a placeholder like a real code', async () => {
    await openSignedIn('/topup');
    expect(await text('topup-note')).toMatch(/operator/);
    expect(await page.locator('#redeem-code').getAttribute('placeholder')).toBe('SY-XXXXX-XXXXX-XXXXX-XXXXX');
  });

  test('the amounts are the configuration\'s: starter and referral credits on the register page, and "Credits added" counts them', async () => {
    await page.goto(`${gw.url}/console/register?ref=ANYCODE1`);
    await eventually(async () => expect(await text('register-sub')).toContain('$1.00 of free starter credits'));
    expect(await page.locator('.invite').textContent()).toContain('both get $20.00');
    await context.clearCookies();
    await openSignedIn('/');
    await eventually(async () => expect(await text('credits-added')).toBe('$1.00')); // the starter credits
  });

  test('keys say why they refuse calls, and a tiny limit is shown as it is', async () => {
    const account = await register();
    await createKey(account, { name: 'tiny', quota_usd: '0.00003' });
    const off = await createKey(account, { name: 'off' });
    const keys = (await (await context.request.get(`${gw.url}/console/api/keys`)).json()) as {
      data: { id: number; prefix: string }[];
    };
    const offId = keys.data.find((k) => k.prefix === off.prefix)!.id;
    const r = await context.request.patch(`${gw.url}/console/api/keys/${offId}`, {
      data: { enabled: false },
      headers: { 'x-csrf-token': account.csrf },
    });
    expect(r.status()).toBe(200);
    await openSignedIn('/keys', account);
    const offRow = page.locator(`tr[data-key-prefix="${off.prefix}"]`);
    expect(await offRow.getByTestId('key-blocked').textContent()).toContain('Disabled');
    const tiny = page.locator('tr').filter({ hasText: 'tiny' });
    expect(await tiny.locator('.quota-text').textContent()).toContain('/ $0.00003');
    expect(await tiny.getByTestId('key-blocked').count()).toBe(0);
  });

  test('a reset link: checked as it opens, then "password changed" with the email filled in; used again, it offers a new one', async () => {
    const account = await register();
    await context.clearCookies();
    const res = await fetch(`${gw.url}/console/api/password-reset`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: account.email }),
    });
    expect(res.status).toBe(202);
    const token = mailedToken(gw.mails, account.email, '/console/reset');
    await page.goto(`${gw.url}/console/reset?token=${token}`);
    await page.getByLabel('New password').fill('password123');
    await eventually(async () => expect(await text('strength')).toMatch(/too easy to guess/));
    await page.getByLabel('New password').fill('violet tram sings 1987 quietly');
    await eventually(async () => expect(await text('strength')).toMatch(/good to use/));
    await page.getByRole('button', { name: 'Set the password' }).click();
    await page.getByTestId('password-changed').waitFor();
    expect(await page.getByLabel('Email').inputValue()).toBe(account.email);

    await page.goto(`${gw.url}/console/reset?token=${token}`);
    await page.getByTestId('reset-dead').waitFor();
    await page.getByRole('link', { name: 'Send me a new link' }).click();
    await page.waitForURL(`${gw.url}/console/forgot`);
  });

  test('a confirmation link opened again says the address is confirmed', async () => {
    const account = await register(); // opened once already
    const token = mailedToken(gw.mails, account.email, '/console/verify');
    await page.goto(`${gw.url}/console/verify?token=${token}`);
    await eventually(async () => expect(await text('verified')).toContain('already confirmed'));
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  test('register: the strength meter as one types; a field error is linked to its field and focused', async () => {
    await page.goto(`${gw.url}/console/register`);
    await page.getByLabel('Email').fill(`someone-${Date.now()}@mailinator.com`);
    await page.getByLabel('Password', { exact: true }).fill('password123');
    await eventually(async () => expect(await text('strength')).toMatch(/Weak|Very weak/));
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    const emailField = page.locator('#reg-email');
    await eventually(async () => expect(await emailField.getAttribute('aria-invalid')).toBe('true'));
    await eventually(async () => {
      const described = await emailField.getAttribute('aria-describedby');
      expect(await page.locator(`#${described}`).textContent({ timeout: 500 })).toContain('throwaway address');
    });
    await eventually(async () => expect(await page.evaluate(() => document.activeElement?.id)).toBe('reg-email'));
  });

  test('the new key dialog keeps Tab inside, and Escape asks before the secret is lost', async () => {
    await openSignedIn('/keys');
    await page.getByRole('button', { name: 'Create key' }).first().click();
    await page
      .getByRole('dialog')
      .getByRole('button', { name: /Create/ })
      .last()
      .click();
    await page.getByTestId('new-secret').waitFor();
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => !!document.activeElement?.closest('[role="dialog"]'))).toBe(true);
    }
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => !!document.activeElement?.closest('[role="dialog"]'))).toBe(true);
    await page.keyboard.press('Escape');
    await page.getByTestId('close-confirm').waitFor();
    expect(await page.getByTestId('new-secret').isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Keep it open' }).click();
    expect(await page.getByTestId('close-confirm').count()).toBe(0);
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Close anyway' }).click();
    await eventually(async () => expect(await page.getByTestId('new-secret').count()).toBe(0));
  });

  test('at 390 px: keys and usage are stacked cards with every button and amount in view; no empty banner on log-in', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${gw.url}/console/login`);
    await page.getByRole('heading', { name: 'Welcome back' }).waitFor();
    const aside = await page.locator('.auth-aside').boundingBox();
    expect(aside!.height).toBeLessThan(120);
    const heading = await page.getByRole('heading', { name: 'Welcome back' }).boundingBox();
    expect(heading!.y).toBeLessThan(300);

    const account = await register();
    const key = await createKey(account, { name: 'phone', quota_usd: '5' });
    await sdk(key.secret).chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: 'hi' }] });
    await page.goto(`${gw.url}/console/keys`); // the sidebar is a menu behind a button at this width
    const row = page.locator(`tr[data-key-prefix="${key.prefix}"]`);
    await row.waitFor();
    for (const name of ['Edit phone', 'Delete phone']) {
      const box = (await row.getByRole('button', { name }).boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
    }
    const wide = () => page.evaluate(() => document.documentElement.scrollWidth);
    expect(await wide()).toBeLessThanOrEqual(390);
    await page.goto(`${gw.url}/console/usage`);
    await page.getByTestId('usage-table').waitFor();
    const cost = (await page.getByTestId('usage-table').locator('td[data-label="Cost"]').first().boundingBox())!;
    expect(cost.x + cost.width).toBeLessThanOrEqual(390);
    expect(await wide()).toBeLessThanOrEqual(390);
    await page.getByTestId('usage-daily').waitFor(); // the per-day view
  });
});
