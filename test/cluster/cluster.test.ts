/**
 * A cluster behind a real load balancer (`make cluster`): three `switchyard serve` nodes (the built dist/) on one
 * database and one Redis, behind HAProxy with the configuration the README shows. Many keys send chat requests and
 * streams through HAProxy while one node is killed with SIGKILL mid-stream and restarted, another is stopped with
 * SIGTERM (drained) and restarted, and the database goes away for 5 s behind a TCP proxy of the test's own. Then:
 * every answer is a success or a clean 503, except requests in flight on the killed node; nothing is charged twice;
 * the dead node's holds are settled by the sweeper; rate limits and budgets hold across the nodes; the ledger
 * verifies; the nodes' metrics agree with the usage records.
 *
 * The database: CLUSTER_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/switchyard_cluster, created when
 * missing; mysql://... works too). Redis: CLUSTER_REDIS_URL (default database 13 of 127.0.0.1:6379, so that its
 * rate-limit counters are apart from other tests').
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Knex } from 'knex';
import { createAccount } from '../../src/accounts/accounts';
import { createKey } from '../../src/accounts/keys';
import { connect, migrate } from '../../src/db';
import { FakeOpenAI } from '../fakes/openaiUpstream';
import { freePort, startProcess, writeConfig, type GatewayProcess } from '../helpers/process';
import { ensureHaproxy, Haproxy } from './haproxy';
import { Load, send, type Outcome } from './load';
import { createDatabase, tcpTarget, throughProxy } from './database';
import { TcpProxy } from './tcpProxy';

const DATABASE_URL = process.env.CLUSTER_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/switchyard_cluster';
const REDIS_URL = process.env.CLUSTER_REDIS_URL || 'redis://127.0.0.1:6379/13';
const ROOT = path.join(__dirname, '..', '..');
/** Short, so that the sweeper settles a dead node's holds within seconds (the defaults are 60 s and 30 s). */
const HOLD_TTL_MS = 3000;
const SWEEP_MS = 500;
/** Room for a loaded 2-core machine on top of what the configuration promises. */
const SLACK_MS = 15_000;

jest.setTimeout(600_000);

const upstream = new FakeOpenAI({ latencyMs: 150, chunkDelayMs: 60 });
let db: Knex;
let dbProxy: TcpProxy;
let haproxy: Haproxy;
let config: string;
let nodeEnv: NodeJS.ProcessEnv;
const nodes: (GatewayProcess | null)[] = [null, null, null];
const ports: number[] = [];
let loadKeys: string[] = [];
let loadAccounts: number[] = [];
let load: Load;
/** What happened when, for the checks at the end. */
const events: {
  startedAt?: number;
  killedAt?: number;
  diedAt?: number;
  victimPid?: number;
  victimLeases?: string[];
  drainedAt?: number;
} = {};

async function startNode(i: number): Promise<GatewayProcess> {
  nodes[i] = await startProcess(config, nodeEnv, [], { port: ports[i], dist: true });
  return nodes[i]!;
}

beforeAll(async () => {
  ensureHaproxy();
  events.startedAt = Date.now();
  await createDatabase(DATABASE_URL);
  db = connect(DATABASE_URL);
  await migrate(db);
  await upstream.start();
  dbProxy = await new TcpProxy(...tcpTarget(DATABASE_URL)).start();
  config = writeConfig(`
server: { shutdown_grace_ms: 30000, shutdown_delay_ms: 3000 }
billing: { hold_ttl_ms: ${HOLD_TTL_MS}, sweep_interval_ms: ${SWEEP_MS} }
limits: { rpm: 0, tpm: 0 }
providers:
  up: { type: openai, base_url: "${upstream.url}", api_key: "sk-fake-upstream-key" }
models:
  - { id: paced, kind: chat, price: { input: 5, output: 10 }, routes: [ { provider: up } ] }
`);
  nodeEnv = { DATABASE_URL: throughProxy(DATABASE_URL, dbProxy.port), REDIS_URL, LOG_LEVEL: 'warn' };
  for (let i = 0; i < 3; i++) ports.push(await freePort());
  await Promise.all([0, 1, 2].map(startNode));
  haproxy = new Haproxy(await freePort(), ports);
  await haproxy.start();
  for (const n of ['n1', 'n2', 'n3']) await haproxy.until(n, 'UP');
  await makeLoadKeys(20, 2);
  load = new Load(haproxy.url, loadKeys);
});

/** Everything this file started is stopped, whatever failed; what HAProxy and the nodes logged is kept. */
afterAll(async () => {
  if (haproxy) {
    const logs = [haproxy.output(), ...nodes.map((n, i) => `n${i + 1}:\n${n?.output() ?? ''}`)].join('\n\n');
    fs.writeFileSync(path.join(haproxy.dir, 'logs.txt'), logs);
    console.log(`cluster: HAProxy's and the nodes' logs are in ${path.join(haproxy.dir, 'logs.txt')}`);
  }
  await load?.stop();
  await Promise.all(nodes.map((n) => n?.stop('SIGKILL')));
  await haproxy?.stop();
  await dbProxy?.close();
  await upstream.close();
  await db?.destroy();
});

async function makeLoadKeys(accounts: number, keysEach: number): Promise<void> {
  // The service calls `switchyard accounts create` and `keys create` make (a CLI process each would take a minute
  // of this machine's CPU for 60 of them); the limited keys below are made with the CLI itself.
  for (let a = 0; a < accounts; a++) {
    const acc = await createAccount(db, `cluster-${crypto.randomUUID()}@example.com`, 100_000_000);
    loadAccounts.push(acc.id);
    for (let k = 0; k < keysEach; k++) loadKeys.push((await createKey(db, { accountId: acc.id })).secret);
  }
}

/** A `switchyard` command (the built one), its JSON output; one that exits 1 (`ledger verify`) still says why. */
async function cli(...args: string[]): Promise<any> {
  const run = promisify(execFile)(process.execPath, [path.join(ROOT, 'dist', 'cli.js'), ...args], {
    env: { ...process.env, DATABASE_URL, REDIS_URL },
  });
  const { stdout } = await run.catch((e: { stdout?: string; stderr?: string }) => {
    if (!e.stdout) throw new Error(`switchyard ${args.join(' ')} failed: ${e.stderr}`);
    return { stdout: e.stdout };
  });
  return JSON.parse(stdout);
}

/** How many rows a query finds (PostgreSQL counts in strings). */
async function count(q: Knex.QueryBuilder): Promise<number> {
  return Number((await q.count({ n: '*' }).first())!.n);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => Promise<boolean> | boolean, ms: number): Promise<number> {
  const start = Date.now();
  while (!(await ok())) {
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
  return Date.now() - start;
}

test('a key rate limit and a key budget hold across the three nodes', async () => {
  const account = await cli(
    'accounts',
    'create',
    '--email',
    `limits-${crypto.randomUUID()}@example.com`,
    '--credits',
    '50',
  );
  const rpm = await cli('keys', 'create', '--account', String(account.id), '--rpm', '10');
  const budget = await cli('keys', 'create', '--account', String(account.id), '--budget', '0.002', '--period', 'day');

  const limited = await Promise.all(Array.from({ length: 30 }, (_x, i) => send(haproxy.url, rpm.key, i % 2 === 0)));
  const accepted = limited.filter((o) => o.status === 200);
  expect(accepted.length).toBeLessThanOrEqual(10);
  expect(accepted.length).toBeGreaterThan(0);
  // the others refused for the rate (or, on a machine too busy to answer its health checks, a clean 503)
  expect(
    limited.filter((o) => o.status !== 200 && verdict(o) !== 'clean 503').map((o) => [o.status, o.body?.error?.type]),
  ).toEqual(
    Array(limited.filter((o) => o.status !== 200 && verdict(o) !== 'clean 503').length).fill([429, 'rate_limit_error']),
  );
  expect(limited.filter((o) => o.status === 429).length).toBeGreaterThan(0);
  expect(new Set(limited.map((o) => o.node)).size).toBe(3); // hammered through every node

  const spending = await Promise.all(Array.from({ length: 60 }, (_x, i) => send(haproxy.url, budget.key, i % 2 === 0)));
  expect(new Set(spending.map((o) => o.node)).size).toBe(3);
  expect(spending.filter((o) => o.status === 200).length).toBeGreaterThan(0);
  for (const o of spending.filter((x) => x.status !== 200 && verdict(x) !== 'clean 503')) {
    expect([o.status, o.body?.error?.code]).toEqual([429, 'insufficient_quota']);
  }
  await until('the budget key settled', async () => (await heldOn(budget.id)) === 0, SLACK_MS);
  const spent = await db('usage_records').where('key_id', budget.id).sum({ s: 'cost_micros' }).first();
  expect(Number(spent!.s)).toBeLessThanOrEqual(2000);
  expect(Number(spent!.s)).toBeGreaterThan(0);
});

const heldOn = (keyId: number) => count(db('holds').where('key_id', keyId));

test('a node killed with SIGKILL mid-stream, then restarted on its port: the sweeper settles its holds', async () => {
  for (const n of ['n1', 'n2', 'n3']) await haproxy.until(n, 'UP', SLACK_MS * 2);
  load.start(8);
  // Kill only once the victim has streams under way, so that the kill certainly lands mid-stream.
  await until('two streams under way on n1', () => load.streamsOn('n1').length >= 2, SLACK_MS * 2);
  const victim = nodes[0]!;
  events.victimPid = victim.proc.pid;
  events.killedAt = Date.now();
  await victim.stop('SIGKILL');
  events.diedAt = Date.now(); // a request that reached it before it was seen dead may have been in flight on it
  console.log(`cluster: n1 (pid ${events.victimPid}) killed at ${new Date(events.killedAt).toISOString()}`);
  const owner = `${os.hostname()}:${events.victimPid}`;
  events.victimLeases = (await db('leases').where('owner', owner).select('id')).map((l) => l.id);
  expect(events.victimLeases.length).toBeGreaterThan(0);
  await startNode(0);
  await haproxy.until('n1', 'UP', SLACK_MS * 2);
  await sleep(1000); // the restarted node takes its share

  // Its leases and the holds under them, expired HOLD_TTL_MS after their last renewal, are settled by a sweep.
  const swept = await until(
    "the dead node's leases and holds settled",
    async () =>
      (await count(db('leases').whereIn('id', events.victimLeases!))) === 0 &&
      (await count(db('holds').whereIn('lease_id', events.victimLeases!))) === 0,
    HOLD_TTL_MS + 2 * SWEEP_MS + SLACK_MS,
  );
  console.log(`cluster: the dead node's holds were settled ${swept + 1000} ms after its restart was seen`);
});

test('a node sent SIGTERM finishes its streams in flight, is drained, and comes back', async () => {
  for (const n of ['n1', 'n2', 'n3']) await haproxy.until(n, 'UP', SLACK_MS * 2);
  await until('a stream under way on n2', () => load.streamsOn('n2').length >= 1, SLACK_MS * 2);
  const inFlight = load.streamsOn('n2');
  events.drainedAt = Date.now();
  const stopped = nodes[1]!.stop('SIGTERM');
  console.log(`cluster: n2 sent SIGTERM at ${new Date(events.drainedAt).toISOString()}`);
  await haproxy.until('n2', 'DOWN');
  await stopped;
  await until('its streams recorded', () => inFlight.every((o) => o.end > 0), SLACK_MS);
  for (const o of inFlight) expect([o.status, o.cut, o.error]).toEqual([200, false, undefined]);
  expect(nodes[1]!.proc.exitCode).toBe(0);
  await startNode(1);
  await haproxy.until('n2', 'UP', SLACK_MS * 2);
  await sleep(1000);
});

test('the database goes away for 5 s and comes back: the nodes answer 503 meanwhile and recover', async () => {
  const before = load.outcomes.length;
  await dbProxy.cut();
  await sleep(5000);
  await dbProxy.restore();
  // a loaded machine: every node's pool has a queue of failed work to get through first
  for (const n of ['n1', 'n2', 'n3']) await haproxy.until(n, 'UP', SLACK_MS * 4);
  const back = Date.now();
  await until(
    'answers after the outage',
    () => load.since(back).filter((o) => o.status === 200).length >= 20,
    SLACK_MS,
  );
  await load.stop();
  const during = load.outcomes.slice(before);
  expect(during.filter((o) => o.status === 503).length).toBeGreaterThan(0); // it was noticed
});

/** Why an answer is acceptable, or null when it is not. */
function verdict(o: Outcome): string | null {
  if (o.status === 200 && !o.cut) return 'served';
  if (o.status === 503 && !o.cut && o.body?.error?.type === 'service_unavailable') return 'clean 503';
  // The only failures allowed: requests the killed node had taken before it died, ended by its death — a stream
  // cut, or HAProxy's 502 for a node that went away before answering. Never a 500, a hang, or an answer from
  // another node that broke.
  const onVictim = o.node === 'n1' && o.start < events.diedAt! && o.end >= events.killedAt!;
  if (onVictim && o.status === 200 && o.cut) return 'stream cut by the kill';
  if (onVictim && o.status === 502 && o.body?.error?.code === 'node_connection_lost') return 'node lost';
  // Not the drained node: it keeps its listener open, answering 503, for `shutdown_delay_ms` (3 s, more than
  // HAProxy's two failed checks take) after SIGTERM, so HAProxy has taken it out before a connection is refused.
  return null;
}

test('every answer is a success or a clean 503, except requests in flight on the killed node', () => {
  const outcomes = load.outcomes;
  const bad = outcomes.filter((o) => verdict(o) === null);
  const show = (o: Outcome) => ({
    ...o,
    start: new Date(o.start).toISOString(),
    end: new Date(o.end).toISOString(),
    body: String(JSON.stringify(o.body)).slice(0, 300),
  });
  expect(bad.map(show)).toEqual([]);
  const count = (v: string) => outcomes.filter((o) => verdict(o) === v).length;
  console.log(
    `cluster: ${outcomes.length} answers: ${count('served')} served, ${count('clean 503')} clean 503, ` +
      `${count('stream cut by the kill')} streams cut by the kill, ${count('node lost')} 502 from the dead node`,
  );
  expect(count('stream cut by the kill')).toBeGreaterThan(0); // the kill landed mid-stream
  expect(count('served')).toBeGreaterThan(50);
});

/**
 * An answer the killed node served before it was seen dead: its settlement may have been in the queue SIGKILL lost.
 * Its client may see the answer's end after the signal was sent (`killedAt`): the node writes until the signal
 * lands, and the client reads what was written after that, so the bound is when the node was seen dead.
 */
const servedByTheKilled = (o: Outcome) => o.node === 'n1' && o.end <= events.diedAt!;

test('nothing is charged twice, every success is charged once, and no hold is left', async () => {
  // No money held: no per-request hold, and no checkpoint of a lease that is gone (the sweeper settles both). A
  // checkpoint row under a live node's open lease may stay until that lease closes — one whose write committed while
  // the database went away, unknown to its node — and carries no money; the last test checks none outlives its lease.
  const held = () =>
    db('holds')
      .whereIn('account_id', loadAccounts)
      .andWhere((q) => q.whereNull('lease_id').orWhereNotIn('lease_id', db('leases').select('id')));
  await until('no hold left', async () => (await count(held())) === 0, HOLD_TTL_MS + SLACK_MS);
  await settledEverywhere();
  // settlements are written behind: wait until every success the live processes served is in (or the time is up)
  const owed = load.outcomes.filter((o) => verdict(o) === 'served' && !servedByTheKilled(o));
  await until(
    'every success recorded',
    async () =>
      (await count(
        db('usage_records').whereIn(
          'request_id',
          owed.map((o) => o.requestId!),
        ),
      )) === owed.length,
    SLACK_MS,
  ).catch(() => {}); // the assertions below say which are missing
  const records = await db('usage_records').whereIn('account_id', loadAccounts).select('request_id', 'cost_micros');
  const debits = await db('ledger')
    .whereIn('account_id', loadAccounts)
    .andWhere('kind', 'usage')
    .select('ref', 'amount_micros');
  const perRef = new Map<string, number>();
  for (const d of debits) perRef.set(d.ref, (perRef.get(d.ref) ?? 0) + 1);
  expect([...perRef.values()].filter((n) => n > 1)).toEqual([]);
  expect(new Set(records.map((r) => r.request_id)).size).toBe(records.length);

  const served = load.outcomes.filter((o) => verdict(o) === 'served');
  const recorded = new Map(records.map((r) => [r.request_id, Number(r.cost_micros)]));
  const debited = new Map(debits.map((d) => [d.ref, -Number(d.amount_micros)]));
  // Each success recorded once, and debited exactly what its record says...
  const wrong = served.filter(
    (o) => recorded.has(o.requestId!) && recorded.get(o.requestId!) !== (debited.get(o.requestId!) ?? 0),
  );
  expect(wrong).toEqual([]);
  // ...and none missing, but for what the killed process had served and not yet written: settlements are written
  // behind (in batches, every 50 ms at most; later on a busy machine), and SIGKILL loses that queue — those requests
  // were not under way any more, so no checkpoint of theirs is left for the sweeper to charge.
  const missing = served.filter((o) => !recorded.has(o.requestId!));
  expect(missing.filter((o) => !servedByTheKilled(o))).toEqual([]);
  console.log(`cluster: ${missing.length} answers the killed process served in its last moments were never charged`);
  // A record no client saw an answer for is a request the killed node had under way (charged by the sweeper).
  const seen = new Set(load.outcomes.map((o) => o.requestId));
  const unseen = records.filter((r) => !seen.has(r.request_id)).length;
  const lost = load.outcomes.filter((o) => verdict(o) === 'node lost').length;
  expect(unseen).toBeLessThanOrEqual(lost);
});

/** A node's counter (every series of it summed) or gauge, from its own /metrics. */
async function metric(node: GatewayProcess, name: string): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.split(' ').pop());
  return sum;
}

async function settledEverywhere(): Promise<void> {
  await until(
    'settlements written',
    async () =>
      (await Promise.all(nodes.map((n) => metric(n!, 'switchyard_settlements_queued')))).every((q) => q === 0),
    SLACK_MS,
  );
}

const sumOver = async (name: string) =>
  (await Promise.all(nodes.map((n) => metric(n!, name)))).reduce((a, b) => a + b, 0);

test("the nodes' metrics agree with the usage records", async () => {
  // switchyard_upstream_requests_total counts each request a process settled (one usage record each), and
  // switchyard_spend_micro_usd_total what it charged. A process's counters start at zero and die with it: the
  // killed and the drained node's are gone, and the sweeper's settlements of the dead node's requests are records
  // no live counter saw. So over the whole run, the live nodes' sums are at most the records; over a quiet batch
  // sent now, with every node up, they grow by exactly what the records grow by.
  await settledEverywhere();
  // every record made while this file's nodes ran (the limited keys' too), not only the load's
  const records = () => db('usage_records').where('created_at', '>=', events.startedAt!);
  const [count0, spend0] = [
    await sumOver('switchyard_upstream_requests_total'),
    await sumOver('switchyard_spend_micro_usd_total'),
  ];
  const all = await records().select('cost_micros');
  expect(count0).toBeLessThanOrEqual(all.length);
  expect(spend0).toBeLessThanOrEqual(all.reduce((s, r) => s + Number(r.cost_micros), 0));

  const batch = await Promise.all(loadKeys.slice(0, 30).map((k, i) => send(haproxy.url, k, i % 2 === 0)));
  expect(batch.map((o) => [o.status, o.cut])).toEqual(Array(30).fill([200, false]));
  expect(new Set(batch.map((o) => o.node)).size).toBe(3);
  await settledEverywhere();
  const ids = batch.map((o) => o.requestId!);
  await until(
    'the batch recorded',
    async () => (await count(db('usage_records').whereIn('request_id', ids))) === 30,
    SLACK_MS,
  ).catch(() => {});
  const mine = await db('usage_records')
    .whereIn(
      'request_id',
      batch.map((o) => o.requestId!),
    )
    .select('cost_micros');
  expect(mine).toHaveLength(30);
  expect((await sumOver('switchyard_upstream_requests_total')) - count0).toBe(30);
  expect((await sumOver('switchyard_spend_micro_usd_total')) - spend0).toBe(
    mine.reduce((s, r) => s + Number(r.cost_micros), 0),
  );
});

test('after every node is stopped gracefully: no hold or lease left, and `switchyard ledger verify` is clean', async () => {
  await Promise.all(nodes.map((n) => n!.stop('SIGTERM')));
  expect(nodes.map((n) => n!.proc.exitCode)).toEqual([0, 0, 0]);
  expect(await count(db('holds').whereIn('account_id', loadAccounts))).toBe(0);
  expect(await count(db('leases').whereIn('account_id', loadAccounts))).toBe(0);
  const verify = await cli('ledger', 'verify');
  expect(verify).toMatchObject({ ok: true, problems: [], stale_holds: [], stale_leases: [] });
});
