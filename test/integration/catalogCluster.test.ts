/**
 * The catalog in the database across processes: two real `switchyard serve` processes on one MariaDB, with one Redis
 * and then with polling alone. A model added through the first one's /admin/api is served by the second within 5 s;
 * a price changed there is what the second charges; a provider key rotated there is the one the upstream receives
 * from the second. MariaDB and PostgreSQL only (DATABASE_URL mysql://... or postgres://..., as `make
 * integration-mysql` and `make integration-pg` run it): the point is processes that share nothing but the database
 * (and Redis).
 */
import crypto from 'node:crypto';
import { createAccount } from '../../src/accounts/accounts';
import { createKey } from '../../src/accounts/keys';
import { connect } from '../../src/db';
import { FakeOpenAI } from '../fakes/openaiUpstream';
import { startProcess, writeConfig, type GatewayProcess } from '../helpers/process';

/** A database server that separate processes share (not an SQLite file). */
const SHARED = /^(mysql|mariadb|postgres(ql)?):/.test(process.env.DATABASE_URL ?? '');
const TOKEN = 'admin-token-for-the-catalog-cluster-0123';
const KEY = crypto.randomBytes(32).toString('base64');
const FIRST_KEY = 'sk-cluster-first-key-AAAA1111';
const ROTATED_KEY = 'sk-cluster-rotated-key-BBBB2222';
/** The bound: a change reaches every process within this long. */
const LIVE_MS = 5_000;

const upstream = new FakeOpenAI();
const db = connect(process.env.DATABASE_URL);
const running: GatewayProcess[] = [];

jest.setTimeout(180_000);

beforeAll(async () => {
  await upstream.start();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop('SIGKILL')));
});

afterAll(async () => {
  await upstream.close();
  await db.destroy();
});

const config = () => `
catalog: database
limits: { rpm: 0, tpm: 0 }
providers:
  up: { type: openai, base_url: "${upstream.url}", api_key: "${FIRST_KEY}" }
  local: { type: mock }
models:
  - { id: mock-chat, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: local } ] }
`;

async function admin(p: GatewayProcess, method: string, path: string, body?: unknown) {
  const r = await fetch(`${p.url}/admin/api${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as any };
}

const chat = (p: GatewayProcess, secret: string, model: string) =>
  fetch(`${p.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello cluster' }], max_tokens: 5 }),
  });

async function newKey() {
  const a = await createAccount(db, `cluster-${crypto.randomUUID()}@example.com`, 10_000_000);
  const { secret } = await createKey(db, { accountId: a.id });
  return { accountId: a.id, secret };
}

/** Milliseconds until `ok()` holds, asked every 25 ms; fails past 15 s (three times the bound, to report the time). */
async function until(ok: () => Promise<boolean>): Promise<number> {
  const start = performance.now();
  while (!(await ok())) {
    if (performance.now() - start > 3 * LIVE_MS) throw new Error('not live after 15 s');
    await new Promise((r) => setTimeout(r, 25));
  }
  return performance.now() - start;
}

/** Once process `p` serves `revision` (its GET /admin/api/catalog says so). */
const serves = (p: GatewayProcess, revision: number) =>
  until(async () => (await admin(p, 'GET', '/catalog')).body.revision >= revision);

/** The usage record of the account's one request, once the write-behind has written it, with its ledger entry. */
async function charged(accountId: number) {
  let record: any;
  await until(async () => !!(record = await db('usage_records').where('account_id', accountId).first()));
  const ledger = await db('ledger').where({ account_id: accountId, kind: 'usage' });
  return { record, ledger: -ledger.reduce((s, r) => s + Number(r.amount_micros), 0) };
}

const MODEL = { kind: 'chat', price: { input: 2, output: 4 }, routes: [{ provider: 'up', model: 'gpt-cluster' }] };

(SHARED ? describe : describe.skip).each([
  ['one Redis', 'redis://127.0.0.1:6379'],
  ['polling alone (no Redis)', ''],
])('two processes on MariaDB, %s', (_name, redisUrl) => {
  test('a model added on one is served by the other within 5 s; its price and its provider key too', async () => {
    await db('catalog_revisions').del(); // the file's catalog is this test's first revision
    const file = writeConfig(config());
    const env = { ADMIN_TOKEN: TOKEN, SWITCHYARD_SECRET_KEY: KEY, REDIS_URL: redisUrl };
    const [p1, p2] = await Promise.all([startProcess(file, env), startProcess(file, env)]);
    running.push(p1, p2);
    const user = await newKey();
    expect((await chat(p2, user.secret, 'cluster-chat')).status).toBe(400); // not in the catalog yet

    const added = await admin(p1, 'PUT', '/catalog/models/cluster-chat', MODEL);
    expect(added.status).toBe(200);
    const waited = await until(async () => (await chat(p2, user.secret, 'cluster-chat')).status === 200);
    expect(waited).toBeLessThan(LIVE_MS);
    expect(upstream.last().headers.authorization).toBe(`Bearer ${FIRST_KEY}`);
    expect(upstream.last().body.model).toBe('gpt-cluster');

    const priced = await admin(p1, 'PUT', '/catalog/models/cluster-chat', {
      ...MODEL,
      price: { input: 1000, output: 2000 },
    });
    expect(priced.status).toBe(200);
    expect(await serves(p2, priced.body.revision)).toBeLessThan(LIVE_MS);
    const payer = await newKey();
    expect((await chat(p2, payer.secret, 'cluster-chat')).status).toBe(200);
    const { record, ledger } = await charged(payer.accountId);
    expect(record.prompt_tokens).toBeGreaterThan(0);
    const cost = record.prompt_tokens * 1000 + record.completion_tokens * 2000; // micro-USD: USD per 1M tokens
    expect(Number(record.cost_micros)).toBe(cost);
    expect(ledger).toBe(cost);

    const rotated = await admin(p1, 'PUT', '/catalog/providers/up', {
      type: 'openai',
      base_url: upstream.url,
      credentials: { api_key: ROTATED_KEY },
    });
    expect(rotated.status).toBe(200);
    expect(await serves(p2, rotated.body.revision)).toBeLessThan(LIVE_MS);
    expect((await chat(p2, user.secret, 'cluster-chat')).status).toBe(200);
    expect(upstream.last().headers.authorization).toBe(`Bearer ${ROTATED_KEY}`);
    for (const p of [p1, p2]) expect(p.output()).not.toContain(ROTATED_KEY);
  });
});
