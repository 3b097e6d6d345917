/**
 * Usage at volume (`make bench-usage`; run with `node --import tsx`, it uses the sources in src/).
 *
 * For each database (MariaDB at mysql://root@127.0.0.1:3306, PostgreSQL at postgres://postgres@127.0.0.1:5432;
 * database switchyard_bench_usage, dropped and made again) it migrates, makes BENCH_USAGE_ACCOUNTS accounts with a
 * key each, fills BENCH_USAGE_RECORDS usage records spread over the last 100 days with multi-row INSERTs and sums them
 * into the daily rollups the way the migration's backfill does (INSERT … SELECT per range of ids). Then, with a
 * gateway serving on a loopback port (mock upstream):
 *   1. the console's usage endpoints (GET /console/api/usage, the same from 30 days ago, /console/api/usage/daily,
 *      /console/api/account) for random accounts, while settlements are written as fast as they go (batches of 500
 *      through the gateway's own writeSettlements, 4 at a time): the endpoints' p95 and the settlement throughput;
 *   2. the paid path (POST /v1/chat/completions, 4 at a time) idle, then while retention deletes the oldest
 *      BENCH_USAGE_PRUNE records (the serve task's batches of 1000 and pauses): its p99 both times.
 * Prints a Markdown table with the targets, met or missed. A database that cannot be reached or migrated is skipped
 * with a line that says why (PostgreSQL support lands separately).
 *
 * Environment: BENCH_USAGE_RECORDS (20000000), BENCH_USAGE_ACCOUNTS (10000), BENCH_USAGE_PRUNE (1000000, at most a
 * quarter of the records), BENCH_USAGE_SECONDS (20: each measured phase), BENCH_USAGE_DATABASES (mariadb,postgres).
 */
import crypto from 'node:crypto';
import knexFactory from 'knex';
import pino from 'pino';

const { connect, migrate } = await import('../../src/db/index.ts');
const { rollUpRange } = await import('../../src/db/rollups.ts');
const { pruneUsageRecords } = await import('../../src/db/queries/usage.ts');
const { writeSettlements } = await import('../../src/billing/store.ts');
const { createKey } = await import('../../src/accounts/keys.ts');
const { createSession } = await import('../../src/accounts/sessions.ts');
const { usage } = await import('../../src/usage.ts');
const { createApp, parseConfig, startApp, stopApp } = await import('../../src/services/app.ts');
const { buildServer } = await import('../../src/http/server.ts');

const num = (name, dflt) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  if (!/^\d+$/.test(v)) throw new Error(`${name} must be a whole number`);
  return Number(v);
};
const RECORDS = num('BENCH_USAGE_RECORDS', 20_000_000);
const ACCOUNTS = Math.min(num('BENCH_USAGE_ACCOUNTS', 10_000), RECORDS);
const PRUNE = Math.min(num('BENCH_USAGE_PRUNE', 1_000_000), Math.floor(RECORDS / 4));
const SECONDS = num('BENCH_USAGE_SECONDS', 20);
const DATABASES = (process.env.BENCH_USAGE_DATABASES || 'mariadb,postgres').split(',').map((s) => s.trim());
const NAME = 'switchyard_bench_usage';
const URLS = {
  mariadb: { server: 'mysql://root@127.0.0.1:3306/', url: `mysql://root@127.0.0.1:3306/${NAME}` },
  postgres: {
    server: 'postgres://postgres@127.0.0.1:5432/postgres',
    url: `postgres://postgres@127.0.0.1:5432/${NAME}`,
  },
};
const DAY = 86_400_000;
const SPAN_DAYS = 100;
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet', 'llama-70b', 'bench-chat'];
const CONFIG = `
limits: { rpm: 0, tpm: 0 }
usage: { retention_days: 0 }
providers: { local: { type: mock } }
models:
  - { id: bench-chat, kind: chat, price: { input: 1, output: 2 }, routes: [ { provider: local, model: mock-up } ] }
`;

const log = (...a) => console.error(...a);
// A database connection that times out on a loaded machine must not end the run: it is told, and the run goes on.
let stray = 0;
for (const event of ['unhandledRejection', 'uncaughtException'])
  process.on(event, (e) => {
    if (!stray++) log(`  ${event}: ${e?.message ?? e}`);
  });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, q) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};

/** Drops and makes the database again, on the server's own connection. */
async function recreate(db) {
  const admin = knexFactory(
    db === 'mariadb'
      ? { client: 'mysql2', connection: URLS.mariadb.server }
      : { client: 'pg', connection: URLS.postgres.server },
  );
  try {
    if (db === 'postgres') await admin.raw(`DROP DATABASE IF EXISTS ${NAME} WITH (FORCE)`);
    else await admin.raw(`DROP DATABASE IF EXISTS ${NAME}`);
    await admin.raw(`CREATE DATABASE ${NAME}`);
  } finally {
    await admin.destroy();
  }
}

/** Accounts with a large balance and one key each (multi-row INSERTs); [accountId, keyId] pairs. */
async function makeAccounts(db) {
  const now = Date.now();
  for (let i = 0; i < ACCOUNTS; i += 1000) {
    const rows = [];
    for (let j = i; j < Math.min(ACCOUNTS, i + 1000); j++)
      rows.push({
        email: `bench-${j}@example.com`,
        referral_code: `bench${j}`,
        balance_micros: 1_000_000_000_000,
        created_at: now,
      });
    await db('accounts').insert(rows);
  }
  const ids = (await db('accounts').orderBy('id').select('id')).map((r) => Number(r.id));
  for (let i = 0; i < ids.length; i += 1000)
    await db('api_keys').insert(
      ids.slice(i, i + 1000).map((id) => ({
        account_id: id,
        name: 'bench',
        prefix: 'sk-bench',
        hash: crypto.randomBytes(32).toString('hex'),
        scopes: 'chat',
        created_at: now,
      })),
    );
  return (await db('api_keys').orderBy('account_id').select('id', 'account_id')).map((r) => [
    Number(r.account_id),
    Number(r.id),
  ]);
}

/** The usage records, oldest first, as literal multi-row INSERTs (no bindings to build), then their rollups. */
async function fill(db, pairs) {
  const start = Date.now() - SPAN_DAYS * DAY;
  const step = (SPAN_DAYS * DAY) / RECORDS;
  const cols =
    'request_id, account_id, key_id, model, provider, endpoint, status, prompt_tokens, cached_tokens, completion_tokens, counted, cost_micros, latency_ms, created_at';
  const t0 = Date.now();
  const ROWS = 2000;
  for (let i = 0; i < RECORDS; i += ROWS) {
    const values = [];
    for (let j = i; j < Math.min(RECORDS, i + ROWS); j++) {
      const [account, key] = pairs[(j * 7919) % pairs.length];
      const status = j % 50 === 0 ? 502 : 200;
      const prompt = 100 + (j % 900);
      values.push(
        `('bench-${j}',${account},${key},'${MODELS[j % MODELS.length]}','local','chat',${status},${prompt},${j % 3 ? 0 : 64},${j % 500},'upstream',${prompt * 3},${20 + (j % 400)},${Math.floor(start + j * step)})`,
      );
    }
    await db.raw(`INSERT INTO usage_records (${cols}) VALUES ${values.join(',')}`);
    if (i % 1_000_000 === 0 && i) log(`  ${i} records, ${Math.round(i / ((Date.now() - t0) / 1000))}/s`);
  }
  const fillS = (Date.now() - t0) / 1000;
  const t1 = Date.now();
  for (let after = 0; after < RECORDS; after += 50_000) await rollUpRange(db, after, after + 50_000);
  return { fillS, rollupS: (Date.now() - t1) / 1000 };
}

/** Console GETs for random accounts until `until()`; their latencies (ms). */
async function consoleLoad(url, sessions, until) {
  const paths = [
    '/console/api/usage',
    `/console/api/usage?from=${new Date(Date.now() - 30 * DAY).toISOString()}`,
    '/console/api/usage/daily?days=30',
    '/console/api/account',
  ];
  const times = [];
  let failed = 0;
  for (let i = 0; !until(); i++) {
    const cookie = sessions[i % sessions.length];
    const t = performance.now();
    const r = await fetch(url + paths[i % paths.length], { headers: { cookie } });
    await r.arrayBuffer();
    times.push(performance.now() - t);
    if (r.status !== 200) failed++;
  }
  return { times, failed };
}

/** Batches of 500 settlements through writeSettlements, `parallel` at a time, until `until()`; records written. */
async function settle(db, pairs, until, parallel = 4) {
  let written = 0;
  let n = 0;
  let failed = 0;
  const batchTimes = [];
  const worker = async () => {
    while (!until()) {
      const now = Date.now();
      const batch = Array.from({ length: 500 }, () => {
        const [accountId, keyId] = pairs[Math.floor(Math.random() * pairs.length)];
        return {
          requestId: `settle-${process.pid}-${n++}-${crypto.randomUUID()}`,
          accountId,
          keyId,
          model: MODELS[n % MODELS.length],
          endpoint: 'chat',
          charge: 300,
          uncovered: 0,
          status: 200,
          provider: 'local',
          counted: 'upstream',
          usage: usage(100, 50),
          latencyMs: 30,
          ttfbMs: 10,
          at: now,
          leaseId: null,
          checkpointed: false,
        };
      });
      const t = performance.now();
      try {
        written += (await writeSettlements(db, batch)).written.length;
        batchTimes.push(performance.now() - t);
      } catch (e) {
        if (!failed++) log(`  a settlement batch failed: ${e.message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return { written, batchTimes, failed };
}

/** Paid requests, 4 at a time, until `until()`; their latencies (ms). */
async function paid(url, secret, until) {
  const times = [];
  let failed = 0;
  const body = JSON.stringify({ model: 'bench-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
  const worker = async () => {
    while (!until()) {
      const t = performance.now();
      const r = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body,
      });
      await r.arrayBuffer();
      times.push(performance.now() - t);
      if (r.status !== 200) failed++;
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return { times, failed };
}

const forSeconds = (s) => {
  const end = Date.now() + s * 1000;
  return () => Date.now() >= end;
};

async function measure(name) {
  const { url } = URLS[name];
  try {
    await recreate(name);
  } catch (e) {
    return { name, skipped: `cannot reach or create the database (${e.message.split('\n')[0]})` };
  }
  let db;
  try {
    db = connect(url);
    await migrate(db);
  } catch (e) {
    await db?.destroy().catch(() => undefined);
    return { name, skipped: `cannot connect or migrate (${e.message.split('\n')[0]})` };
  }
  const app = createApp({ config: parseConfig(CONFIG, 'bench.yaml'), db, log: pino({ level: 'silent' }) });
  let server;
  try {
    log(`${name}: ${ACCOUNTS} accounts, ${RECORDS} records`);
    const pairs = await makeAccounts(db);
    const { fillS, rollupS } = await fill(db, pairs);
    log(`${name}: filled in ${fillS.toFixed(1)} s, rolled up in ${rollupS.toFixed(1)} s`);
    await startApp(app);
    server = await buildServer(app, { port: 0, host: '127.0.0.1' });
    await server.start();
    const base = `http://127.0.0.1:${server.info.port}`;
    const sessions = [];
    for (let i = 0; i < 200; i++) {
      const [accountId] = pairs[Math.floor(Math.random() * pairs.length)];
      sessions.push(`sy_session=${(await createSession(db, accountId, DAY)).id}`);
    }
    const { secret } = await createKey(db, { accountId: pairs[0][0], name: 'bench paid' });
    const idleConsole = await consoleLoad(base, sessions, forSeconds(Math.max(3, SECONDS / 4)));
    const t = Date.now();
    const until = forSeconds(SECONDS);
    const [busyConsole, settled] = await Promise.all([consoleLoad(base, sessions, until), settle(db, pairs, until)]);
    const settleRate = settled.written / ((Date.now() - t) / 1000);
    const idle = await paid(base, secret, forSeconds(Math.max(5, SECONDS / 2)));
    const idleSettle = await settle(db, pairs, forSeconds(Math.max(3, SECONDS / 4)), 1);
    // Retention: the oldest PRUNE records (they are in created_at order), with the serve task's batches and pauses.
    const [{ created_at: cutoff }] = await db('usage_records')
      .orderBy('id')
      .offset(PRUNE)
      .limit(1)
      .select('created_at');
    let pruning = true;
    const tp = Date.now();
    const pruned = pruneUsageRecords(db, Number(cutoff)).finally(() => (pruning = false));
    const [during, duringSettle] = await Promise.all([
      paid(base, secret, () => !pruning),
      settle(db, pairs, () => !pruning, 1),
    ]);
    const deleted = await pruned;
    return {
      name,
      fillS,
      rollupS,
      consoleIdleP95: pct(idleConsole.times, 0.95),
      consoleP95: pct(busyConsole.times, 0.95),
      consoleFailed: idleConsole.failed + busyConsole.failed,
      consoleN: busyConsole.times.length,
      settleRate,
      settleFailed: settled.failed + idleSettle.failed + duringSettle.failed,
      paidIdleP99: pct(idle.times, 0.99),
      paidPruneP99: pct(during.times, 0.99),
      paidFailed: idle.failed + during.failed,
      settleIdleP99: pct(idleSettle.batchTimes, 0.99),
      settlePruneP99: pct(duringSettle.batchTimes, 0.99),
      deleted,
      pruneS: (Date.now() - tp) / 1000,
    };
  } finally {
    await server?.stop({ timeout: 1000 });
    await stopApp(app).catch(() => undefined);
    await db.destroy();
  }
}

const ms = (x) => `${x.toFixed(1)} ms`;
const met = (ok) => (ok ? 'met' : '**missed**');

function report(results) {
  const lines = [
    `## Usage at volume (${RECORDS.toLocaleString('en')} records, ${ACCOUNTS.toLocaleString('en')} accounts; ${new Date().toISOString().slice(0, 10)})`,
    '',
    '| database | measure | value | target | |',
    '|---|---|---|---|---|',
  ];
  for (const r of results) {
    if (r.skipped) {
      lines.push(`| ${r.name} | skipped | ${r.skipped} | | |`);
      continue;
    }
    const row = (m, v, target, ok) =>
      lines.push(`| ${r.name} | ${m} | ${v} | ${target} | ${ok === null ? '' : met(ok)} |`);
    row(
      'fill (records/s) / rollups',
      `${Math.round(RECORDS / r.fillS)}/s; rollups ${r.rollupS.toFixed(1)} s`,
      '',
      null,
    );
    row('console usage endpoints p95, idle', ms(r.consoleIdleP95), '≤ 50 ms', r.consoleIdleP95 <= 50);
    row(
      `console usage endpoints p95, settling (${r.consoleN} requests, ${r.consoleFailed} not 200)`,
      ms(r.consoleP95),
      '≤ 50 ms',
      r.consoleP95 <= 50 && r.consoleFailed === 0,
    );
    row(
      `settlement throughput while they run (${r.settleFailed} batches failed)`,
      `${Math.round(r.settleRate)} records/s`,
      '≥ 20000/s',
      r.settleRate >= 20_000 && r.settleFailed === 0,
    );
    row(
      `paid path p99 idle → while pruning ${r.deleted} records (${r.pruneS.toFixed(0)} s; ${r.paidFailed} not 200)`,
      `${ms(r.paidIdleP99)} → ${ms(r.paidPruneP99)}`,
      '≤ 2× idle',
      r.paidPruneP99 <= 2 * r.paidIdleP99 && r.paidFailed === 0,
    );
    row(
      'settlement batch (500) p99 idle → while pruning',
      `${ms(r.settleIdleP99)} → ${ms(r.settlePruneP99)}`,
      '≤ 2× idle',
      r.settlePruneP99 <= 2 * r.settleIdleP99,
    );
  }
  return lines.join('\n');
}

const results = [];
for (const name of DATABASES) {
  if (!URLS[name]) throw new Error(`BENCH_USAGE_DATABASES: ${name} is not one of ${Object.keys(URLS).join(', ')}`);
  const r = await measure(name);
  if (r.skipped) log(`${name}: skipped: ${r.skipped}`);
  results.push(r);
}
console.log(report(results));
process.exit(0);
