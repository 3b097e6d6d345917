/**
 * Gateway overhead benchmark (`make bench`, after `make build`; plain Node, runs the compiled dist/).
 *
 * What it measures: Switchyard against a bare Node reverse proxy (test/bench/proxy.mjs: node:http + a keep-alive
 * http.Agent, bodies piped, no logic), both in front of the same zero-latency fake OpenAI upstream
 * (test/bench/upstream.mjs), measured in the same run, alternating targets within each round. The bare proxy is the
 * practical limit for any Node gateway on this machine, so results are ratios / differences to it rather than
 * absolute numbers, which on a shared machine mean little.
 *
 * Load generator: wrk (C, one thread: -t1) with test/bench/wrk.lua, which sends the POST body, counts non-2xx and
 * bad bodies and prints latency percentiles as JSON. A JavaScript load generator would compete with the gateway for
 * the same cores. Streaming time to first byte, which wrk cannot see, is measured by a small node:http client here.
 *
 * For each database (BENCH_DATABASES, default "sqlite,mariadb": a fresh SQLite file, then database switchyard_bench
 * on mysql://root@127.0.0.1:3306, dropped and re-created) it starts a fresh upstream, proxy and gateway, creates an
 * account and key with the CLI, runs every scenario BENCH_ROUNDS times against both targets, then stops the gateway
 * with SIGTERM, runs `switchyard ledger verify` and counts the usage records against the paid 2xx answers.
 * Prints a Markdown report and writes it to test/bench/results.md.
 *
 * Environment (all optional):
 *   BENCH_ROUNDS=3           rounds per scenario              BENCH_DURATION=10   seconds measured per wrk run
 *   BENCH_WARMUP=2           seconds of warm-up before each run (wrk; the streaming client too)
 *   BENCH_STREAM_N=200       streaming requests per run (4 connections)
 *   BENCH_DATABASES          comma-separated, of sqlite and mariadb (default both)
 *   BENCH_ONLY='a;b'         only the scenarios whose name contains one of these substrings (e.g. '1 connection')
 *   BENCH_OUT                where to write the report (default test/bench/results.md; "-" for nowhere)
 *   BENCH_STRICT=1           exit 1 when a target is missed (otherwise only when something broke)
 *   BENCH_PROFILE=1          run the gateway under --cpu-prof and print its top functions by self time (numbers are
 *                            then slowed by the profiler, so the report is not written unless BENCH_OUT says where)
 *   BENCH_ROOT               the Switchyard checkout whose dist/ is run (default: the repository this file is in)
 *   BENCH_KEEP=1             keep the temporary directory (database, configuration, profiles)
 *   BENCH_MESSAGES           a JSON file of chat messages to send (default: a two-line prompt)
 */
import { spawn, spawnSync, execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ANSWER } from './upstream.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const ROOT = path.resolve(process.env.BENCH_ROOT || REPO);
const CLI = path.join(ROOT, 'dist', 'cli.js');
const UPSTREAM = path.join(HERE, 'upstream.mjs');
const PROXY = path.join(HERE, 'proxy.mjs');
const WRK_LUA = path.join(HERE, 'wrk.lua');

const num = (name, dflt, { min = 0, int = false } = {}) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || (int && !Number.isInteger(n)))
    throw new Error(`${name} must be ${int ? 'a whole number' : 'a number'} ≥ ${min}`);
  return n;
};
const ROUNDS = num('BENCH_ROUNDS', 3, { min: 1, int: true });
const DURATION = num('BENCH_DURATION', 10, { min: 1, int: true }); // wrk takes whole seconds
const WARMUP = num('BENCH_WARMUP', 2, { int: true });
const STREAM_N = num('BENCH_STREAM_N', 200, { min: 1, int: true });
const STREAM_CONNECTIONS = 4;
const PROFILE = process.env.BENCH_PROFILE === '1';
/** Node's flags for the gateway process (as a deployment would start it; see the README's Deployment section). */
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
const STRICT = process.env.BENCH_STRICT === '1';
const OUT = process.env.BENCH_OUT ?? (PROFILE ? '-' : path.join(HERE, 'results.md'));
const DATABASES = (process.env.BENCH_DATABASES || 'sqlite,mariadb')
  .split(',')
  .map((s) => s.trim().toLowerCase())
  .filter(Boolean);
const MARIADB = { host: '127.0.0.1', port: 3306, user: 'root', database: 'switchyard_bench' };
const CREDITS_USD = '1000';
const MODEL = 'bench-chat'; // Switchyard's name for it
const UPSTREAM_MODEL = 'fake-chat'; // the upstream's own, used through the bare proxy
const EXPECT_CHAT = 'fixed benchmark answer'; // a substring every chat answer's body must contain
const EXPECT_MODELS = '"object":"list"';
// BENCH_MESSAGES: a JSON file of chat messages to send instead (a large prompt: what the bytes path saves grows with it)
const MESSAGES = process.env.BENCH_MESSAGES
  ? JSON.parse(fs.readFileSync(process.env.BENCH_MESSAGES, 'utf8'))
  : [
      { role: 'system', content: 'You are a concise assistant.' },
      { role: 'user', content: 'Say hello in one short sentence.' },
    ];
if (!ANSWER.includes(EXPECT_CHAT)) throw new Error('upstream.mjs answers something else than the harness checks for');

// ---------------------------------------------------------------------------------------------------------------
// Scenarios. metric: what is compared; compare: 'ratio' (Switchyard / proxy) or 'diff' (Switchyard − proxy).

const CHAT = { kind: 'wrk', method: 'POST', path: '/chat/completions', paid: true, expect: EXPECT_CHAT };
const SCENARIOS = [
  {
    ...CHAT,
    id: 'chat32',
    name: 'paid chat, 32 connections',
    connections: 32,
    metric: 'rps',
    compare: 'ratio',
    target: { op: '>=', value: 0.5 },
    cpu: true,
  },
  {
    ...CHAT,
    id: 'chat1',
    name: 'paid chat, 1 connection',
    connections: 1,
    metric: 'p50',
    compare: 'diff',
    target: { op: '<=', value: 0.5 },
  },
  {
    ...CHAT,
    id: 'chat128',
    name: 'paid chat, 128 connections',
    connections: 128,
    metric: 'p99',
    compare: 'ratio',
    target: { op: '<=', value: 3 },
    rss: true,
  },
  {
    kind: 'wrk',
    id: 'models',
    name: 'GET /v1/models, 32 connections',
    method: 'GET',
    path: '/models',
    connections: 32,
    expect: EXPECT_MODELS,
    metric: 'rps',
    compare: 'ratio',
    target: { op: '>=', value: 0.5 },
  },
  {
    kind: 'stream',
    id: 'stream',
    name: 'streaming chat, time to first byte',
    paid: true,
    connections: STREAM_CONNECTIONS,
    metric: 'ttfb50',
    compare: 'diff',
    target: { op: '<=', value: 1 },
  },
];
const CPU_TARGET_US = 200;
const RSS_TARGET_MB = 150;

// ---------------------------------------------------------------------------------------------------------------
// Processes: every child is killed on the way out, whatever the way out is.

const children = new Set();
let tmpDir = null;
let interrupted = false;

function killAll(signal = 'SIGTERM') {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill(signal);
}
process.on('exit', () => {
  killAll('SIGKILL');
  if (tmpDir && !process.env.BENCH_KEEP) fs.rmSync(tmpDir, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => {
    process.stderr.write(`\nbench: ${sig}, stopping\n`);
    interrupted = true;
    process.exitCode = 130;
    killAll('SIGTERM');
    setTimeout(() => process.exit(130), 500).unref();
  });
}

function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode, ms: 0, killed: false });
  const t0 = Date.now();
  return new Promise((resolve) => {
    let killed = false;
    const t = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, ms);
    child.once('exit', (code, signal) => {
      clearTimeout(t);
      resolve({ code, signal, ms: Date.now() - t0, killed });
    });
  });
}

async function stop(child, ms = 5_000) {
  if (!child) return null;
  child.kill('SIGTERM');
  return waitExit(child, ms);
}

async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

const execFileP = promisify(execFile);

/** A CLI command of the gateway; its JSON answer, or its exit code and stderr. */
async function cli(env, ...args) {
  try {
    const { stdout } = await execFileP(process.execPath, [CLI, ...args], { env, cwd: ROOT, maxBuffer: 64 << 20 });
    return { code: 0, json: JSON.parse(stdout), stdout };
  } catch (e) {
    if (typeof e.code !== 'number') throw e;
    let json = null;
    try {
      json = JSON.parse(e.stdout);
    } catch {}
    return { code: e.code, json, stdout: e.stdout, stderr: e.stderr };
  }
}

async function mariadb(sql) {
  const { stdout } = await execFileP('mariadb', [
    `-u${MARIADB.user}`,
    `-h${MARIADB.host}`,
    `-P${MARIADB.port}`,
    '-N',
    '-e',
    sql,
  ]);
  return stdout;
}

/** A helper process (upstream, proxy) that prints {"url": ...} on its first line once it listens. */
async function startHelper(name, script, args = []) {
  const child = track(spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] }));
  const line = await new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the ${name} exited (${code}) before it listened`)));
  });
  return { child, url: JSON.parse(line).url };
}

async function startGateway(env, port, profDir) {
  const args = [
    ...NODE_FLAGS,
    ...(profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : []),
    CLI,
    'serve',
    '--port',
    String(port),
    '--host',
    '127.0.0.1',
  ];
  const child = track(spawn(process.execPath, args, { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  const logs = { lines: 0, head: [] };
  for (const stream of [child.stdout, child.stderr]) {
    readline.createInterface({ input: stream }).on('line', (l) => {
      logs.lines++;
      if (logs.head.length < 5) logs.head.push(l.length > 300 ? `${l.slice(0, 300)}…` : l);
      if (logs.lines <= 50) process.stderr.write(`gateway: ${l}\n`);
      else if (logs.lines === 51) process.stderr.write('gateway: (further log lines not shown)\n');
    });
  }
  return { child, logs, url: `http://127.0.0.1:${port}/v1` };
}

async function waitReady(gw, key) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (gw.child.exitCode !== null) throw new Error(`the gateway exited (${gw.child.exitCode}) during start-up`);
    try {
      const res = await fetch(`${gw.url}/models`, { headers: { authorization: `Bearer ${key}` } });
      if (res.status === 200) return;
      throw new Error(`GET /v1/models answered ${res.status}: ${await res.text()}`);
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`the gateway did not answer within 30 s: ${e.message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// /proc readings: CPU time (user + system) and peak memory of a process.

function safe(fn, dflt) {
  try {
    return fn();
  } catch {
    return dflt;
  }
}

const TICK_MS = 1000 / Number(safe(() => execFileSync('getconf', ['CLK_TCK']).toString().trim(), '100'));

function cpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS; // utime, stime (fields 14 and 15)
}

/** VmHWM (peak resident set) in MB (10^6 bytes). */
function peakMB(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return (Number(/^VmHWM:\s+(\d+) kB/m.exec(s)?.[1] ?? NaN) * 1024) / 1e6;
}

// ---------------------------------------------------------------------------------------------------------------
// Load: wrk for the request rates and latencies, a node:http client for streaming time to first byte.

const shq = (s) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function wrkArgs({ url, connections, seconds, method, body, expect, key }) {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', WRK_LUA];
  if (key) args.push('-H', `Authorization: Bearer ${key}`);
  args.push(url, '--', method, body ?? '', expect ?? '');
  return args;
}

/** The command line as a reader can run it (the key shown as $KEY, the script relative to the repository). */
function wrkCommand(opts) {
  return ['wrk', ...wrkArgs({ ...opts, key: opts.key ? '$KEY' : null })]
    .map((a) => (a === WRK_LUA ? path.relative(REPO, WRK_LUA) : a))
    .map((a) => (a.includes('$KEY') ? `"${a}"` : shq(a)))
    .join(' ');
}

async function runWrk(opts, pids) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, safe(() => cpuMs(pid), NaN)]));
  const child = track(spawn('wrk', wrkArgs(opts), { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const { code, signal } = await waitExit(child, (opts.seconds + 60) * 1000);
  const cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, safe(() => cpuMs(pid), NaN) - before[k]]));
  const line = out.split('\n').find((l) => l.startsWith('WRK_JSON '));
  if (code !== 0 || !line)
    throw new Error(`wrk failed (${code ?? signal}): ${(err || out).trim().split('\n').slice(-3).join(' / ')}`);
  const r = JSON.parse(line.slice('WRK_JSON '.length));
  const seconds = r.duration_us / 1e6;
  const answered2xx = r.ok + r.bad_bodies;
  const e = r.errors;
  return {
    requests: r.requests,
    ok: r.ok,
    answered2xx,
    non2xx: r.non2xx,
    bad: r.bad_bodies,
    sockErrors: e.connect + e.read + e.write + e.timeout,
    errorText: `connect ${e.connect}, read ${e.read}, write ${e.write}, timeout ${e.timeout}`,
    rps: answered2xx / seconds,
    p50: r.latency_ms.p50,
    p90: r.latency_ms.p90,
    p99: r.latency_ms.p99,
    cpuUsPerReq: Object.fromEntries(
      Object.entries(cpu).map(([k, ms]) => [k, r.requests ? (ms * 1000) / r.requests : NaN]),
    ),
  };
}

function percentile(sorted, q) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/**
 * Streaming chat requests, `connections` at a time on kept-alive connections, until `count` were sent (or, for a
 * warm-up, until `seconds` passed). Records the time from sending a request to the first byte of its answer's body,
 * and whether the stream ended with `data: [DONE]`.
 */
async function runStream({ url, key, model, count = Infinity, seconds = Infinity, connections = STREAM_CONNECTIONS }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const body = JSON.stringify({ model, messages: MESSAGES, stream: true, stream_options: { include_usage: true } });
  const headers = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...(key ? { authorization: `Bearer ${key}` } : {}),
  };
  const target = `${url}/chat/completions`;
  const r = { requests: 0, ok: 0, answered2xx: 0, non2xx: 0, bad: 0, sockErrors: 0, ttfb: [] };
  const deadline = Date.now() + seconds * 1000;
  let sent = 0;
  const one = () =>
    new Promise((resolve) => {
      const t0 = performance.now();
      let settled = false;
      const finish = (fn) => {
        if (settled) return;
        settled = true;
        fn();
        resolve();
      };
      const req = http.request(target, { method: 'POST', agent, headers }, (res) => {
        let first = null;
        let tail = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          if (first === null) first = performance.now() - t0;
          tail = (tail + c).slice(-64);
        });
        res.on('end', () =>
          finish(() => {
            r.requests++;
            if (res.statusCode < 200 || res.statusCode > 299) r.non2xx++;
            else {
              r.answered2xx++;
              if (!tail.trimEnd().endsWith('data: [DONE]')) r.bad++;
              else {
                r.ok++;
                r.ttfb.push(first);
              }
            }
          }),
        );
        res.on('error', () => finish(() => r.sockErrors++));
        res.on('close', () => finish(() => r.sockErrors++)); // closed before its end
      });
      req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
      req.on('error', () => finish(() => r.sockErrors++));
      req.end(body);
    });
  const worker = async () => {
    while (sent < count && Date.now() < deadline) {
      sent++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  agent.destroy();
  r.ttfb.sort((a, b) => a - b);
  return {
    ...r,
    p50: percentile(r.ttfb, 0.5),
    p90: percentile(r.ttfb, 0.9),
    p99: percentile(r.ttfb, 0.99),
    ttfb: undefined,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// One database: fresh upstream, proxy and gateway; all rounds; shutdown, ledger verify, usage records.

function configYaml(upstreamUrl) {
  return [
    '# Written by test/bench/bench.mjs',
    'providers:',
    '  fake:',
    '    type: openai',
    `    base_url: "${upstreamUrl}"`,
    '    api_key: bench',
    '    max_connections: 256           # as many upstream sockets as the bare proxy may use',
    'limits: { rpm: 0, tpm: 0 }          # no per-key limits',
    'models:',
    `  - id: ${MODEL}`,
    '    kind: chat',
    '    owned_by: bench',
    '    price: { input: 0.15, output: 0.60 }',
    `    routes: [ { provider: fake, model: ${UPSTREAM_MODEL} } ]`,
    '',
  ].join('\n');
}

async function prepareDatabase(db) {
  if (db === 'sqlite') {
    const file = path.join(tmpDir, 'bench.db');
    return { url: `sqlite:${file}`, file, label: `SQLite (better-sqlite3), a fresh file on ${fsType(tmpDir)}` };
  }
  if (db === 'mariadb') {
    let version;
    try {
      version = (await mariadb('SELECT VERSION()')).trim();
    } catch (e) {
      throw new Error(
        `MariaDB is not reachable on ${MARIADB.host}:${MARIADB.port} as ${MARIADB.user} (${String(e.stderr || e.message).trim()}); ` +
          'start it (e.g. start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd) or set BENCH_DATABASES=sqlite',
      );
    }
    await mariadb(`DROP DATABASE IF EXISTS ${MARIADB.database}; CREATE DATABASE ${MARIADB.database}`);
    return {
      url: `mysql://${MARIADB.user}@${MARIADB.host}:${MARIADB.port}/${MARIADB.database}`,
      label: `MariaDB ${version} on ${MARIADB.host}:${MARIADB.port}, database ${MARIADB.database} (dropped and re-created)`,
    };
  }
  throw new Error(`unknown database '${db}' in BENCH_DATABASES (sqlite, mariadb)`);
}

/** Usage records by status and open holds, read straight from the database after the gateway exited. */
async function countUsage(db, database) {
  if (db === 'sqlite') {
    const Database = createRequire(path.join(ROOT, 'package.json'))('better-sqlite3');
    const conn = new Database(database.file, { readonly: true, fileMustExist: true });
    try {
      const byStatus = Object.fromEntries(
        conn
          .prepare('SELECT status, COUNT(*) AS n FROM usage_records GROUP BY status')
          .all()
          .map((r) => [String(r.status), Number(r.n)]),
      );
      const holds = Number(conn.prepare('SELECT COUNT(*) AS n FROM holds').get().n);
      return { byStatus, holds };
    } finally {
      conn.close();
    }
  }
  const out = await mariadb(
    `SELECT status, COUNT(*) FROM ${MARIADB.database}.usage_records GROUP BY status; SELECT 'holds', COUNT(*) FROM ${MARIADB.database}.holds`,
  );
  const rows = out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t'));
  return {
    byStatus: Object.fromEntries(rows.filter((r) => r[0] !== 'holds').map((r) => [r[0], Number(r[1])])),
    holds: Number(rows.find((r) => r[0] === 'holds')?.[1] ?? NaN),
  };
}

async function benchDatabase(db, scenarios) {
  const res = { db, runs: [], commands: [], broken: [] };
  const database = await prepareDatabase(db);
  res.label = database.label;
  let upstream, proxy, gw;
  try {
    upstream = await startHelper('fake upstream', UPSTREAM);
    proxy = await startHelper('bare proxy', PROXY, ['--upstream', new URL(upstream.url).origin]);
    const configFile = path.join(tmpDir, `switchyard-${db}.yaml`);
    fs.writeFileSync(configFile, configYaml(upstream.url));
    const env = { ...process.env, DATABASE_URL: database.url, SWITCHYARD_CONFIG: configFile, LOG_LEVEL: 'warn' };
    delete env.REDIS_URL; // in-memory rate-limit counters: the benchmark measures one process

    const account = await cli(
      env,
      'accounts',
      'create',
      '--email',
      `bench-${process.pid}-${Date.now()}@switchyard.local`,
      '--credits',
      CREDITS_USD,
    );
    if (account.code !== 0)
      throw new Error(`accounts create failed (exit ${account.code}): ${String(account.stderr).trim()}`);
    const created = await cli(env, 'keys', 'create', '--account', String(account.json.id), '--name', 'bench');
    if (created.code !== 0)
      throw new Error(`keys create failed (exit ${created.code}): ${String(created.stderr).trim()}`);
    const key = created.json.key;

    const profDir = PROFILE ? path.join(tmpDir, `prof-${db}`) : null;
    gw = await startGateway(env, await freePort(), profDir);
    await waitReady(gw, key);
    const pids = { proxy: proxy.child.pid, gateway: gw.child.pid };
    const targets = {
      proxy: { url: proxy.url, key, model: UPSTREAM_MODEL },
      gateway: { url: gw.url, key, model: MODEL },
    };
    res.paid = { answered2xx: 0, slack: 0 };
    res.rss = null;

    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate the targets within the round, and which goes first from one round to the next.
      const order = round % 2 ? ['proxy', 'gateway'] : ['gateway', 'proxy'];
      for (const s of scenarios) {
        for (const target of order) {
          const via = targets[target];
          const tag = `${db} round ${round}/${ROUNDS}: ${s.name} via ${target === 'proxy' ? 'bare proxy' : 'Switchyard'}`;
          const runs = [];
          if (s.kind === 'wrk') {
            const opts = {
              url: via.url + s.path,
              connections: s.connections,
              method: s.method,
              body: s.method === 'POST' ? JSON.stringify({ model: via.model, messages: MESSAGES }) : null,
              expect: s.expect,
              key: via.key,
            };
            if (round === 1) res.commands.push(wrkCommand({ ...opts, seconds: DURATION }));
            process.stderr.write(`bench: ${tag}: ${WARMUP} s warm-up, ${DURATION} s measured\n`);
            if (WARMUP > 0) runs.push(await runWrk({ ...opts, seconds: WARMUP }, pids));
            runs.push(await runWrk({ ...opts, seconds: DURATION }, pids));
          } else {
            process.stderr.write(`bench: ${tag}: ${WARMUP} s warm-up, ${STREAM_N} requests measured\n`);
            if (WARMUP > 0) runs.push(await runStream({ ...via, seconds: WARMUP }));
            runs.push(await runStream({ ...via, count: STREAM_N }));
          }
          const r = runs.at(-1);
          if (target === 'gateway' && s.paid) {
            for (const x of runs) res.paid.answered2xx += x.answered2xx;
            if (s.kind === 'wrk') res.paid.slack += runs.length * s.connections; // in flight when wrk stopped
          }
          const warmBad = runs.slice(0, -1).reduce((n, x) => n + x.non2xx + x.bad + x.sockErrors, 0);
          res.runs.push({ round, scenario: s.id, target, ...r, warmBad });
          for (const x of runs) {
            const what = x === r ? 'measured run' : 'warm-up';
            if (x.non2xx || x.bad || x.sockErrors)
              res.broken.push(
                `${tag} (${what}): ${x.non2xx} non-2xx, ${x.bad} bad bodies, ${x.sockErrors} socket errors${x.errorText ? ` (${x.errorText})` : ''}`,
              );
          }
          const value =
            s.kind === 'stream'
              ? `TTFB p50 ${f2(r.p50)} ms`
              : `${f0(r.rps)} req/s, p50 ${f2(r.p50)} ms, p99 ${f2(r.p99)} ms`;
          const cpu = s.kind === 'wrk' ? `, CPU ${f0(r.cpuUsPerReq[target])} µs/req` : '';
          process.stderr.write(
            `bench:   ${value}${cpu}; non-2xx ${r.non2xx}, bad bodies ${r.bad}, socket errors ${r.sockErrors}\n`,
          );
          if (s.rss)
            res.rss = { proxy: safe(() => peakMB(pids.proxy), NaN), gateway: safe(() => peakMB(pids.gateway), NaN) };
        }
      }
    }

    // Stop the gateway the way an operator does, then check the books.
    process.stderr.write(`bench: ${db}: stopping the gateway (SIGTERM)\n`);
    res.gwExit = await stop(gw.child, 40_000);
    res.gwLogs = gw.logs;
    if (res.gwExit.killed || res.gwExit.code !== 0)
      res.broken.push(`the gateway did not exit cleanly on SIGTERM: ${exitText(res.gwExit)}`);
    const verify = await cli(env, 'ledger', 'verify');
    res.verify = verify;
    if (verify.code !== 0)
      res.broken.push(
        `switchyard ledger verify exited ${verify.code}: ${JSON.stringify(verify.json ?? String(verify.stderr).trim())}`,
      );
    res.usage = await countUsage(db, database);
    const s200 = res.usage.byStatus['200'] ?? 0;
    res.usage.consistent =
      s200 >= res.paid.answered2xx && s200 <= res.paid.answered2xx + res.paid.slack && res.usage.holds === 0;
    if (!res.usage.consistent) res.broken.push(`usage records do not match the paid answers: ${usageText(res)}`);
    if (profDir) res.profile = profileText(profDir);
  } finally {
    if (gw && gw.child.exitCode === null && gw.child.signalCode === null) await stop(gw.child, 40_000);
    await stop(proxy?.child);
    await stop(upstream?.child);
  }
  return res;
}

// ---------------------------------------------------------------------------------------------------------------
// The report.

const f0 = (n) => (Number.isFinite(n) ? n.toFixed(0) : 'n/a');
const f1 = (n) => (Number.isFinite(n) ? n.toFixed(1) : 'n/a');
const f2 = (n) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
const signed = (n) => (Number.isFinite(n) ? `${n >= 0 ? '+' : '−'}${Math.abs(n).toFixed(2)}` : 'n/a');

function median(xs) {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (!v.length) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

const exitText = (x) =>
  x.killed
    ? `killed after ${(x.ms / 1000).toFixed(0)} s (did not stop on SIGTERM)`
    : `exit code ${x.code ?? x.signal} after ${(x.ms / 1000).toFixed(1)} s`;

function usageText(res) {
  const u = res.usage;
  const others = Object.entries(u.byStatus)
    .filter(([k]) => k !== '200')
    .map(([k, n]) => `${n} × status ${k}`)
    .join(', ');
  return (
    `${u.byStatus['200'] ?? 0} usage records with status 200${others ? ` (plus ${others})` : ''} for ${res.paid.answered2xx} paid 2xx answers the clients received ` +
    `(up to ${res.paid.slack} more were in flight when a wrk run stopped); ${u.holds} open holds`
  );
}

const METRIC = {
  rps: { label: 'req/s', fmt: f0 },
  p50: { label: 'p50 ms', fmt: f2 },
  p99: { label: 'p99 ms', fmt: f2 },
  ttfb50: { label: 'TTFB p50 ms', fmt: f2 },
};
const value = (run, metric) => (metric === 'ttfb50' ? run.p50 : run[metric]);
const judge = (x, t) => (!Number.isFinite(x) ? 'n/a' : (t.op === '>=' ? x >= t.value : x <= t.value) ? 'PASS' : 'FAIL');

/** Rows of the summary table and of the per-round table for one database. */
function tables(res, scenarios) {
  const summary = [];
  const perRound = [];
  for (const s of scenarios) {
    const rounds = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const p = res.runs.find((r) => r.round === round && r.scenario === s.id && r.target === 'proxy');
      const g = res.runs.find((r) => r.round === round && r.scenario === s.id && r.target === 'gateway');
      if (!p || !g) continue;
      const pv = value(p, s.metric);
      const gv = value(g, s.metric);
      const cmp = s.compare === 'ratio' ? gv / pv : gv - pv;
      rounds.push({ round, p, g, pv, gv, cmp });
      const fmt = METRIC[s.metric].fmt;
      const count = (r) =>
        `${r.requests} / ${r.non2xx + r.bad + r.sockErrors}${r.warmBad ? ` (+${r.warmBad} in warm-up)` : ''}`;
      perRound.push(
        `| ${s.name} | ${round} | ${METRIC[s.metric].label} | ${fmt(pv)} | ${fmt(gv)} | ${s.compare === 'ratio' ? `${f2(cmp)}×` : `${signed(cmp)} ms`} | ` +
          `${f2(p.p50)} / ${f2(p.p90)} / ${f2(p.p99)} | ${f2(g.p50)} / ${f2(g.p90)} / ${f2(g.p99)} | ` +
          `${s.kind === 'wrk' ? `${f0(p.cpuUsPerReq.proxy)} / ${f0(g.cpuUsPerReq.gateway)}` : '–'} | ${count(p)} | ${count(g)} |`,
      );
    }
    if (!rounds.length) continue;
    const fmt = METRIC[s.metric].fmt;
    const cmp = median(rounds.map((r) => r.cmp));
    const t = s.target;
    summary.push({
      row: `| ${s.name}: ${METRIC[s.metric].label} | ${fmt(median(rounds.map((r) => r.pv)))} | ${fmt(median(rounds.map((r) => r.gv)))} | ${s.compare === 'ratio' ? `${f2(cmp)}×` : `${signed(cmp)} ms`} | ${s.compare === 'ratio' ? `${t.op === '>=' ? '≥' : '≤'} ${t.value}×` : `≤ +${t.value} ms`} | ${judge(cmp, t)} |`,
      pass: judge(cmp, t),
    });
    if (s.cpu) {
      const pc = median(rounds.map((r) => r.p.cpuUsPerReq.proxy));
      const gc = median(rounds.map((r) => r.g.cpuUsPerReq.gateway));
      summary.push({
        row: `| CPU per request (user + system, ${s.name}): µs | ${f0(pc)} | ${f0(gc)} | ${f2(gc / pc)}× | Switchyard ≤ ${CPU_TARGET_US} µs | ${judge(gc, { op: '<=', value: CPU_TARGET_US })} |`,
        pass: judge(gc, { op: '<=', value: CPU_TARGET_US }),
      });
    }
    if (s.rss && res.rss) {
      const v = judge(res.rss.gateway, { op: '<=', value: RSS_TARGET_MB });
      summary.push({
        row: `| peak RSS (VmHWM) after the 128-connection runs: MB | ${f1(res.rss.proxy)} | ${f1(res.rss.gateway)} | ${f2(res.rss.gateway / res.rss.proxy)}× | Switchyard ≤ ${RSS_TARGET_MB} MB | ${v} |`,
        pass: v,
      });
    }
  }
  return { summary, perRound };
}

function render({ results, errors, scenarios, mach, loadBefore, loadAfter, started }) {
  const L = [];
  const failedTargets = [];
  L.push(`### Switchyard against a bare Node proxy (${started.toISOString().slice(0, 16).replace('T', ' ')} UTC)`);
  L.push('');
  L.push(
    `Machine: ${mach.model}, nproc ${mach.nproc}, ${mach.memGiB} GiB, ${mach.kernel}; Node ${mach.node}; ${mach.wrk}. ` +
      `Switchyard: ${mach.build}. Load average (1, 5, 15 min) before: ${loadBefore.map((x) => x.toFixed(2)).join(' ')}, after: ${loadAfter.map((x) => x.toFixed(2)).join(' ')}.`,
  );
  L.push('');
  L.push(
    'Setup: a zero-latency fake OpenAI upstream (`test/bench/upstream.mjs`), a bare Node reverse proxy in front of it ' +
      '(`test/bench/proxy.mjs`: node:http, a keep-alive agent with 256 sockets, bodies piped, no logic) and Switchyard ' +
      `(\`switchyard serve\`, one priced model, no rate limits, max_connections 256 to the upstream), each a separate process on 127.0.0.1, ` +
      `with wrk (one thread) as the load generator, all sharing the same cores. ${ROUNDS} round(s); in each, every scenario ` +
      `runs against the proxy and against Switchyard (order swapped every other round), ${WARMUP} s warm-up then ${DURATION} s measured. ` +
      `Streaming: ${STREAM_N} requests, ${STREAM_CONNECTIONS} at a time on kept-alive connections (a node:http client: wrk cannot see ` +
      'first bytes); the upstream sends a role chunk at once, then 20 content chunks 5 ms apart. Values are medians over the rounds; ' +
      'ratio = Switchyard / proxy, difference = Switchyard − proxy, both taken per round, then the median. CPU = user + system time ' +
      'of that process during the 32-connection run ÷ the answers wrk received.',
  );
  L.push('');
  const changed = Object.entries({
    BENCH_ROUNDS: [ROUNDS, 3],
    BENCH_DURATION: [DURATION, 10],
    BENCH_WARMUP: [WARMUP, 2],
    BENCH_STREAM_N: [STREAM_N, 200],
  })
    .filter(([, [v, d]]) => v !== d)
    .map(([k, [v]]) => `${k}=${v}`);
  if (changed.length || PROFILE || process.env.BENCH_ONLY) {
    L.push(
      `**Not the default settings** (${[...changed, ...(PROFILE ? ['BENCH_PROFILE=1 (slowed by the profiler)'] : []), ...(process.env.BENCH_ONLY ? [`BENCH_ONLY=${process.env.BENCH_ONLY}`] : [])].join(', ')}): compare with care.`,
    );
    L.push('');
  }
  if (results[0]?.commands.length) {
    L.push(
      `wrk command lines (${results[0].db}; warm-ups use -d${WARMUP}s; $KEY is the bench key; the bare proxy gets the same header and forwards it):`,
    );
    L.push('');
    L.push('```');
    for (const c of results[0].commands) L.push(c);
    L.push('```');
    L.push('');
  }
  for (const res of results) {
    const { summary, perRound } = tables(res, scenarios);
    L.push(`#### ${res.db === 'sqlite' ? 'SQLite' : 'MariaDB'}: ${res.label}`);
    L.push('');
    L.push('| scenario | bare proxy | Switchyard | ratio / difference | target | result |');
    L.push('|---|---:|---:|---:|---|---|');
    res.targets = summary.length;
    for (const s of summary) {
      L.push(s.row);
      if (s.pass === 'FAIL') failedTargets.push(`${res.db}: ${s.row.split(' | ')[0].slice(2)}`);
    }
    L.push('');
    L.push(
      'Per round (latency percentiles in ms; streaming rows: time to first byte; requests / failures = answers received / non-2xx + bad bodies + socket errors):',
    );
    L.push('');
    L.push(
      '| scenario | round | metric | proxy | Switchyard | ratio / difference | proxy p50 / p90 / p99 | Switchyard p50 / p90 / p99 | CPU µs/req proxy / Switchyard | proxy requests / failures | Switchyard requests / failures |',
    );
    L.push('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of perRound) L.push(r);
    L.push('');
    if (res.gwExit) {
      L.push(
        `Gateway shutdown on SIGTERM: ${exitText(res.gwExit)}. \`switchyard ledger verify\`: ${res.verify.code === 0 ? 'exit 0 (clean)' : `exit ${res.verify.code} — FAILED`}. ` +
          `Usage: ${usageText(res)} — ${res.usage.consistent ? 'consistent' : 'INCONSISTENT'}. Gateway log lines at warn or above: ${res.gwLogs.lines}` +
          `${res.gwLogs.lines ? ` (first: \`${res.gwLogs.head[0].replace(/`/g, "'")}\`)` : ''}.`,
      );
      L.push('');
    }
    if (res.broken.length) {
      L.push('Failures:');
      L.push('');
      for (const b of res.broken) L.push(`- ${b}`);
      L.push('');
    }
  }
  for (const e of errors) {
    L.push(`#### ${e.db}: did not complete`);
    L.push('');
    L.push(`\`${e.message}\``);
    L.push('');
  }
  const missed = results
    .map((r) => [r.db, failedTargets.filter((f) => f.startsWith(`${r.db}: `)).length, r.targets])
    .filter(([, n]) => n);
  if (missed.length)
    L.push(`Targets missed: ${missed.map(([db, n, of]) => `${db} ${n} of ${of}`).join(', ')} (FAIL rows above).`);
  else L.push(results.some((r) => r.targets) ? 'All targets met.' : 'No results.');
  return { text: L.join('\n'), failedTargets };
}

/** Self time of the gateway's CPU profile by area (package, own module, Node internals) and by function. */
function profileText(dir) {
  const file = fs.existsSync(dir) && fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return 'bench: no CPU profile was written\n';
  const prof = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
  const dt = new Map();
  for (let i = 0; i < prof.samples.length; i++)
    dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
  const byArea = new Map();
  const byFn = new Map();
  let total = 0;
  for (const n of prof.nodes) {
    const us = dt.get(n.id) ?? 0;
    if (!us) continue;
    const { url, functionName, lineNumber } = n.callFrame;
    if (functionName === '(idle)') continue;
    total += us;
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
    const area = pkg
      ? pkg
      : url.includes('/dist/')
        ? `switchyard ${url.slice(url.indexOf('/dist/') + 6)}`
        : url.startsWith('node:')
          ? 'node internals'
          : functionName.startsWith('(')
            ? functionName
            : url
              ? 'other'
              : 'native / V8';
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    const fn = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/')}:${lineNumber + 1}` : ''}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
  }
  const top = (m, n) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `| ${k} | ${(v / 1000).toFixed(0)} | ${((v / total) * 100).toFixed(1)} % |`);
  const out = [
    '',
    `### Gateway CPU profile (${(total / 1e6).toFixed(1)} s of non-idle samples)`,
    '',
    '| area | self ms | share |',
    '|---|---:|---:|',
    ...top(byArea, 15),
    '',
    '| function | self ms | share |',
    '|---|---:|---:|',
    ...top(byFn, 25),
  ];
  return `${out.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------------------------

function machine() {
  const cpuinfo = safe(() => fs.readFileSync('/proc/cpuinfo', 'utf8'), '');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const nproc = safe(() => execFileSync('nproc').toString().trim(), String(os.availableParallelism()));
  const v = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  const wrk =
    `${v.stdout ?? ''}${v.stderr ?? ''}`
      .split('\n')[0]
      .replace(/\s*Copyright.*$/, '')
      .trim() || 'wrk';
  const commit = safe(
    () => execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { stdio: 'pipe' }).toString().trim(),
    null,
  );
  const build = `${ROOT === REPO ? 'this checkout' : ROOT}'s dist/${commit ? ` (HEAD ${commit})` : ''}`;
  return {
    nproc,
    model,
    node: process.version,
    kernel: `${os.type()} ${os.release()}`,
    memGiB: (os.totalmem() / 2 ** 30).toFixed(1),
    wrk,
    build,
  };
}

function fsType(dir) {
  const mounts = safe(() => fs.readFileSync('/proc/mounts', 'utf8'), '')
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f.length > 2 && (dir === f[1] || dir.startsWith(f[1].endsWith('/') ? f[1] : `${f[1]}/`)));
  mounts.sort((a, b) => b[1].length - a[1].length);
  return mounts[0]?.[2] ?? 'unknown';
}

async function main() {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`make build\` (or \`npm run build\`) first`);
  if (spawnSync('wrk', ['-v'], { stdio: 'ignore' }).error?.code === 'ENOENT') {
    throw new Error('wrk is not installed: `apt-get install wrk` (Debian/Ubuntu) or see https://github.com/wg/wrk');
  }
  const only = (process.env.BENCH_ONLY ?? '')
    .split(';')
    .map((x) => x.trim())
    .filter(Boolean);
  const scenarios = SCENARIOS.filter((s) => !only.length || only.some((o) => s.name.includes(o)));
  if (!scenarios.length)
    throw new Error(
      `BENCH_ONLY=${process.env.BENCH_ONLY} matches no scenario: ${SCENARIOS.map((s) => s.name).join('; ')}`,
    );
  for (const db of DATABASES)
    if (!['sqlite', 'mariadb'].includes(db))
      throw new Error(`BENCH_DATABASES: unknown database '${db}' (sqlite, mariadb)`);

  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-'));
  const mach = machine();
  const loadBefore = os.loadavg();
  const started = new Date();
  const results = [];
  const errors = [];
  for (const db of DATABASES) {
    try {
      results.push(await benchDatabase(db, scenarios));
    } catch (e) {
      if (interrupted) return;
      process.stderr.write(`bench: ${db}: ${e.stack ?? e}\n`);
      errors.push({ db, message: e.message ?? String(e) });
    }
  }

  if (interrupted) return;
  const { text, failedTargets } = render({
    results,
    errors,
    scenarios,
    mach,
    loadBefore,
    loadAfter: os.loadavg(),
    started,
  });
  process.stdout.write(`${text}\n`);
  if (OUT !== '-') {
    fs.writeFileSync(OUT, `${text}\n`);
    process.stderr.write(`bench: report written to ${path.relative(process.cwd(), OUT) || OUT}\n`);
  }
  for (const res of results) if (res.profile) process.stdout.write(`\n#### ${res.db}\n${res.profile}`);

  const broken = errors.length + results.reduce((n, r) => n + r.broken.length, 0);
  if (broken) process.stderr.write(`bench: something broke (${broken} finding(s)): see the report\n`);
  if (STRICT && failedTargets.length)
    process.stderr.write(`bench: BENCH_STRICT=1 and ${failedTargets.length} target(s) missed\n`);
  process.exitCode = broken || (STRICT && failedTargets.length) ? 1 : 0;
}

main().catch((e) => {
  if (interrupted) return;
  process.stderr.write(`bench: ${e.stack ?? e}\n`);
  killAll('SIGTERM');
  process.exitCode = 1;
});
