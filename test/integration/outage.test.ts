/**
 * Outages, against real servers this test starts and stops itself (test/helpers/servers.ts; the shared databases and
 * Redis stay up) — a PostgreSQL when DATABASE_URL is postgres:// (`make integration-pg`), else a MariaDB: while the database is down /readyz fails and /v1 answers 503 instead of hanging, and both
 * recover by themselves when it is back; while Redis is down the rate limits fall back to the process's own
 * counters and requests keep being served, and they are shared again once it is back.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { createAccount } from '../../src/accounts/accounts';
import { createKey } from '../../src/accounts/keys';
import { verifyLedger } from '../../src/billing/verify';
import { connect } from '../../src/db';
import { startProcess, writeConfig, type GatewayProcess } from '../helpers/process';
import { ownDatabase, ownRedis, type OwnServer } from '../helpers/servers';

jest.setTimeout(120_000);

const CONFIG = `
providers: { local: { type: mock } }
models:
  - { id: priced, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: local } ] }
`;

const running: GatewayProcess[] = [];
const servers: OwnServer[] = [];
const dbs: Knex[] = [];

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  await Promise.all(dbs.map((d) => d.destroy()));
  await Promise.all(servers.map((s) => s.remove()));
});

async function key(db: Knex) {
  const a = await createAccount(db, `outage-${crypto.randomUUID()}@example.com`, 1_000_000);
  return { accountId: a.id, secret: (await createKey(db, { accountId: a.id })).secret };
}

/** A request that must not hang: an answer within 20 s or the test fails on the abort. */
const chat = (url: string, secret: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 }),
    signal: AbortSignal.timeout(20_000),
  });
const ready = (url: string) => fetch(`${url}/readyz`, { signal: AbortSignal.timeout(20_000) });

async function eventually(ok: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`never: ${what}`);
}

test('database down: /readyz fails and /v1 answers 503 without hanging; both recover when it is back', async () => {
  const server = await ownDatabase();
  servers.push(server);
  const gw = await startProcess(writeConfig(CONFIG), { DATABASE_URL: server.url });
  running.push(gw);
  const db = connect(server.url);
  dbs.push(db);
  const before = await key(db);
  expect((await chat(gw.url, before.secret)).status).toBe(200);
  const unseen = await key(db); // a key this process has not cached: it must ask the database

  await server.stop();
  const r = await ready(gw.url);
  expect(r.status).toBe(503);
  expect(await r.json()).toEqual({ ready: false, database: 'unreachable', draining: false });
  const refused = await chat(gw.url, unseen.secret);
  expect(refused.status).toBe(503);
  expect(await refused.json()).toEqual({
    error: {
      message: 'The service is temporarily unavailable',
      type: 'service_unavailable',
      param: null,
      code: 'service_unavailable',
    },
  });
  expect((await fetch(`${gw.url}/healthz`)).status).toBe(200); // alive, just not ready

  await server.start();
  await eventually(async () => (await ready(gw.url)).status === 200, '/readyz recovers');
  await eventually(async () => (await chat(gw.url, unseen.secret)).status === 200, '/v1 recovers');
  expect((await chat(gw.url, (await key(db)).secret)).status).toBe(200);
  await gw.stop();
  expect(gw.output()).toContain('the database is unreachable: 503');
  const v = await verifyLedger(db);
  expect(v.problems).toEqual([]);
  expect(v.ok).toBe(true);
});

test('database frozen (it accepts connections and never answers): /v1 answers 503 instead of hanging, /readyz fails; both recover', async () => {
  const server = await ownDatabase();
  servers.push(server);
  // A shorter query limit than the default 10 s keeps the test short; the behaviour is the same.
  const gw = await startProcess(writeConfig(CONFIG), { DATABASE_URL: server.url, DATABASE_QUERY_TIMEOUT_MS: '2000' });
  running.push(gw);
  const db = connect(server.url);
  dbs.push(db);
  const before = await key(db);
  expect((await chat(gw.url, before.secret)).status).toBe(200); // the pool now holds open connections to it
  const unseen = await key(db); // not cached: its request must ask the database

  await server.freeze();
  const r = await ready(gw.url);
  expect(r.status).toBe(503);
  expect(await r.json()).toEqual({ ready: false, database: 'unreachable', draining: false });
  // Each of these takes a pooled connection whose query never comes back: every one is answered (the fetch
  // gives up after 20 s), with a 503, and the connections stuck on the frozen server are replaced.
  const refused = await Promise.all(Array.from({ length: 12 }, () => chat(gw.url, unseen.secret)));
  for (const res of refused) {
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error.code).toBe('service_unavailable');
  }

  server.thaw();
  await eventually(async () => (await ready(gw.url)).status === 200, '/readyz recovers');
  await eventually(async () => (await chat(gw.url, unseen.secret)).status === 200, '/v1 recovers');
  await gw.stop();
  expect(gw.output()).toContain('the database is unreachable: 503');
  expect(gw.output()).not.toContain('unhandled error'); // an outage, not a bug: no 500s
  expect((await verifyLedger(db)).problems).toEqual([]);
});

test('Redis down: the rate limits fall back to each process and requests are served; shared again when it is back', async () => {
  const redis = await ownRedis();
  servers.push(redis);
  const file = writeConfig(`limits: { rpm: 3, tpm: 0 }\n${CONFIG}`);
  const env = { REDIS_URL: redis.url, LOG_LEVEL: 'info' }; // info: the line that says Redis is back
  const [a, b] = await Promise.all([startProcess(file, env), startProcess(file, env)]);
  running.push(a, b);
  const db = connect(process.env.DATABASE_URL);
  dbs.push(db);
  /** Four requests of one key, alternately to the two processes. */
  const alternate = async (secret: string) => {
    const out: number[] = [];
    for (const gw of [a, b, a, b]) out.push((await chat(gw.url, secret)).status);
    return out;
  };
  expect(await alternate((await key(db)).secret)).toEqual([200, 200, 200, 429]); // 3 a minute, counted together

  await redis.stop();
  await eventually(
    async () => a.output().includes('redis unavailable') && b.output().includes('redis unavailable'),
    'the processes notice',
  );
  expect(await alternate((await key(db)).secret)).toEqual([200, 200, 200, 200]); // each process counts its own 2

  await redis.start();
  await eventually(
    async () => a.output().includes('redis is back') && b.output().includes('redis is back'),
    'the processes reconnect',
  );
  expect(await alternate((await key(db)).secret)).toEqual([200, 200, 200, 429]);
  for (const gw of [a, b]) expect(gw.output()).not.toMatch(/"level":50/); // no errors logged
});
