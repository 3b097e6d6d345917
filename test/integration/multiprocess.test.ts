/**
 * Several gateway processes on one database (and one Redis): concurrent spending never overdraws and every
 * success is charged exactly once; a process killed with streams in flight leaves holds that another process
 * settles; rate limits are shared through Redis and survive its absence. Runs on DATABASE_URL (SQLite, MariaDB,
 * PostgreSQL).
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { createAccount } from '../../src/accounts/accounts';
import { createKey, type NewKey } from '../../src/accounts/keys';
import { verifyLedger } from '../../src/billing/verify';
import { connect } from '../../src/db';
import { startProcess, writeConfig, type GatewayProcess } from '../helpers/process';

jest.setTimeout(60_000);

let db: Knex;
const running: GatewayProcess[] = [];

beforeAll(() => {
  db = connect(process.env.DATABASE_URL);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop('SIGKILL')));
});

afterAll(() => db.destroy());

async function start(config: string, n: number, env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess[]> {
  const file = writeConfig(config);
  const procs = await Promise.all(Array.from({ length: n }, () => startProcess(file, env)));
  running.push(...procs);
  return procs;
}

async function account(credits: number, key: Partial<NewKey> = {}) {
  const a = await createAccount(db, `mp-${crypto.randomUUID()}@example.com`, credits);
  const { key: k, secret } = await createKey(db, { accountId: a.id, ...key });
  return { accountId: a.id, keyId: k.id, secret };
}

function chat(url: string, secret: string, body: object = {}) {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50, ...body }),
  });
}

const PRICED = `
providers: { local: { type: mock, latency_ms: 5 } }
models:
  - { id: priced, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: local } ] }
`;

async function books(accountId: number) {
  const balance = Number((await db('accounts').where('id', accountId).first()).balance_micros);
  const usage = await db('ledger').where({ account_id: accountId, kind: 'usage' });
  const records = await db('usage_records').where('account_id', accountId);
  const check = await verifyLedger(db);
  return {
    balance,
    charged: -usage.reduce((s, r) => s + Number(r.amount_micros), 0),
    usageRows: usage.length,
    refs: new Set(usage.map((r) => r.ref)).size,
    recordedCost: records.reduce((s, r) => s + Number(r.cost_micros), 0),
    holds: (await db('holds').where('account_id', accountId)).length,
    problems: check.problems.filter((p) => p.account_id === accountId),
    stale: check.stale_holds.filter((h) => h.account_id === accountId),
  };
}

test('three processes, 200 concurrent requests, an account that affords only some: never overdrawn, each success charged once', async () => {
  const procs = await start(`billing: { min_output_tokens: 50 }\nlimits: { rpm: 0, tpm: 0 }\n${PRICED}`, 3);
  const START = 1000;
  const a = await account(START);
  const responses = await Promise.all(Array.from({ length: 200 }, (_x, i) => chat(procs[i % 3].url, a.secret)));
  const bodies = await Promise.all(responses.map((r) => r.json() as Promise<any>));
  const ok = responses.filter((r) => r.status === 200).length;
  const refused = bodies.filter((b, i) => responses[i].status === 429 && b.error.type === 'insufficient_quota').length;
  expect(ok + refused).toBe(200);
  expect(ok).toBeGreaterThan(0);
  expect(refused).toBeGreaterThan(0);
  const b = await books(a.accountId);
  expect(b.balance).toBeGreaterThanOrEqual(0);
  expect(START - b.balance).toBe(b.charged);
  expect(b.charged).toBe(b.recordedCost);
  expect(b.usageRows).toBe(ok);
  expect(b.refs).toBe(ok);
  expect(b.holds).toBe(0);
  expect(b.problems).toEqual([]);
});

test('the same against a key quota smaller than the balance: the key never spends past its quota', async () => {
  const procs = await start(`billing: { min_output_tokens: 50 }\nlimits: { rpm: 0, tpm: 0 }\n${PRICED}`, 3);
  const a = await account(1_000_000, { quotaMicros: 300 });
  const responses = await Promise.all(Array.from({ length: 120 }, (_x, i) => chat(procs[i % 3].url, a.secret)));
  const statuses = responses.map((r) => r.status);
  expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
  expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  const key = await db('api_keys').where('id', a.keyId).first();
  const b = await books(a.accountId);
  expect(Number(key.used_micros)).toBeLessThanOrEqual(300);
  expect(Number(key.used_micros)).toBe(b.charged);
  expect(1_000_000 - b.balance).toBe(b.charged);
  expect(b.usageRows).toBe(statuses.filter((s) => s === 200).length);
  expect(b.problems).toEqual([]);
});

test('kill -9 with streams in flight: another process settles the holds at their checkpoints, nothing charged twice', async () => {
  const config = `billing: { hold_ttl_ms: 1200, sweep_interval_ms: 300 }\nlimits: { rpm: 0, tpm: 0 }\n${PRICED.replace('latency_ms: 5', 'latency_ms: 250')}`;
  const [victim] = await start(config, 1);
  const START = 1_000_000;
  const a = await account(START);
  const streams = await Promise.all(Array.from({ length: 5 }, () => chat(victim.url, a.secret, { stream: true })));
  expect(streams.every((s) => s.status === 200)).toBe(true);
  // read each stream up to its first words, so every request has certainly cost something
  await Promise.all(
    streams.map(async (s) => {
      const reader = s.body!.getReader();
      let text = '';
      while (!text.includes('"content":"This')) text += new TextDecoder().decode((await reader.read()).value);
    }),
  );
  // wait for a lease renewal to record each stream's progress
  for (
    let i = 0;
    i < 100 && (await db('holds').where('account_id', a.accountId).andWhere('progress_micros', '>', 0)).length < 5;
    i++
  ) {
    await new Promise((r) => setTimeout(r, 100));
  }
  expect((await db('holds').where('account_id', a.accountId).andWhere('progress_micros', '>', 0)).length).toBe(5);
  await victim.stop('SIGKILL');

  const [sweeper] = await start(config, 1); // a new process; its sweeper finds the expired holds
  // Room for a loaded CI machine: the lease expires 1.2 s after its last renewal, and sweeps run every 0.3 s.
  for (let i = 0; i < 300 && (await db('holds').where('account_id', a.accountId)).length; i++)
    await new Promise((r) => setTimeout(r, 100));
  const b = await books(a.accountId);
  if (b.holds)
    throw new Error(`${b.holds} holds left unsettled after 30 s; the sweeping process logged:\n${sweeper.output()}`);
  expect(b.usageRows).toBe(5);
  expect(b.refs).toBe(5);
  expect(b.charged).toBeGreaterThan(0);
  expect(START - b.balance).toBe(b.charged);
  expect(b.problems).toEqual([]);
  expect(b.stale).toEqual([]);
  const records = await db('usage_records').where('account_id', a.accountId);
  expect(records.map((r) => r.counted)).toEqual(Array(5).fill('checkpoint'));
});

test('requests per minute are shared by two processes through Redis', async () => {
  const procs = await start(`limits: { rpm: 0, tpm: 0 }\n${PRICED}`, 2, { REDIS_URL: 'redis://127.0.0.1:6379' });
  const a = await account(1_000_000, { rpmLimit: 4 });
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await chat(procs[i % 2].url, a.secret)).status);
  expect(statuses.filter((s) => s === 200)).toHaveLength(4);
  expect(statuses.filter((s) => s === 429)).toHaveLength(2);
});

test('without Redis the limits fall back to each process, and requests keep being served', async () => {
  const [p] = await start(`limits: { rpm: 0, tpm: 0 }\n${PRICED}`, 1, { REDIS_URL: 'redis://127.0.0.1:1' });
  const a = await account(1_000_000, { rpmLimit: 2 });
  const first = await chat(p.url, a.secret);
  expect(first.status).toBe(200);
  expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('1');
  expect((await chat(p.url, a.secret)).status).toBe(200);
  expect((await chat(p.url, a.secret)).status).toBe(429);
  expect(p.output()).toContain('redis unavailable');
});
