/**
 * Gateway overhead benchmark (`make bench`, after `make build`; plain Node, runs the compiled dist/).
 *
 * Starts a fake OpenAI-compatible upstream with a fixed think time (test/bench/upstream.mjs) and the gateway
 * (`node dist/cli.js serve`) as separate processes on loopback, creates an account with credits and a key with
 * limits high enough never to throttle, then drives each scenario with autocannon at a fixed concurrency, first
 * against the upstream directly, then through the gateway: non-streaming chat, streaming chat (time to last byte)
 * and GET /v1/models. Every answer's body is checked; afterwards the usage records are counted against what the
 * clients received and `switchyard ledger verify` must pass. Prints a Markdown report and writes it to
 * test/bench/results.md.
 *
 * Environment (all optional):
 *   BENCH_DURATION=10      seconds measured per row        BENCH_WARMUP=2       seconds of warm-up before each row
 *   BENCH_CONNECTIONS=10   concurrent connections          BENCH_THINK_MS=20    the fake upstream's think time
 *   BENCH_DATABASE_URL     the gateway's database (default: a fresh SQLite file in a temporary directory);
 *                          for MySQL / MariaDB use a dedicated, empty database: `ledger verify` checks all of it
 *   BENCH_OUT              where to write the report (default test/bench/results.md; "-" for nowhere)
 *   BENCH_ONLY='a;b'       run only the scenarios whose name contains one of these (e.g. BENCH_ONLY='streaming')
 *   BENCH_PROFILE=1        run the gateway under --cpu-prof and print where its CPU time went (numbers are then
 *                          slowed by the profiler, so the report is not written unless BENCH_OUT says where)
 */
import { spawn, execFile, execSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = path.join(ROOT, 'dist', 'cli.js');
const UPSTREAM = path.join(ROOT, 'test', 'bench', 'upstream.mjs');
const require = createRequire(import.meta.url);

const num = (name, dflt) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number`);
  return n;
};
const DURATION = num('BENCH_DURATION', 10);
const WARMUP = num('BENCH_WARMUP', 2);
const CONNECTIONS = num('BENCH_CONNECTIONS', 10);
const THINK_MS = num('BENCH_THINK_MS', 20);
const PROFILE = process.env.BENCH_PROFILE === '1';
const OUT = process.env.BENCH_OUT ?? (PROFILE ? '-' : path.join(ROOT, 'test', 'bench', 'results.md'));
const CREDITS_USD = '1000';
const MODEL = 'bench-chat';
const EXPECTED_TEXT = 'Hello! This is a fixed benchmark answer from the fake upstream.';

// ---------------------------------------------------------------------------------------------------------------
// Processes: every child is killed on the way out, whatever the way out is.

const children = new Set();
let tmpDir = null;

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
    killAll('SIGTERM');
    setTimeout(() => process.exit(130), 300).unref();
  });
}

function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), ms);
    child.once('exit', (code, signal) => {
      clearTimeout(t);
      resolve({ code, signal });
    });
  });
}

async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

const execFileP = promisify(execFile);
async function cli(env, ...args) {
  try {
    const { stdout } = await execFileP(process.execPath, [CLI, ...args], { env, cwd: ROOT });
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

async function startUpstream() {
  const child = track(spawn(process.execPath, [UPSTREAM, '--think-ms', String(THINK_MS)], { stdio: ['ignore', 'pipe', 'inherit'] }));
  const line = await new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the fake upstream exited (${code}) before it listened`)));
  });
  return { child, url: JSON.parse(line).url };
}

async function startGateway(env, port, profDir) {
  const args = [...(profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : []), CLI, 'serve', '--port', String(port), '--host', '127.0.0.1'];
  const child = track(spawn(process.execPath, args, { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  const logs = { lines: 0, tail: [] };
  for (const stream of [child.stdout, child.stderr]) {
    readline.createInterface({ input: stream }).on('line', (l) => {
      logs.lines++;
      if (logs.tail.length < 20) logs.tail.push(l);
      process.stderr.write(`gateway: ${l}\n`);
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
// /proc readings: CPU time (user + system) and memory of a process.

const TICK_MS = 1000 / Number(safe(() => execSync('getconf CLK_TCK').toString().trim(), '100'));

function safe(fn, dflt) {
  try {
    return fn();
  } catch {
    return dflt;
  }
}

function cpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS; // utime, stime (fields 14 and 15)
}

/** Busy CPU time of the whole machine (all cores, all processes), from /proc/stat. */
function machineBusyMs() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal
  return (total - f[3] - f[4]) * TICK_MS;
}

function memory(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
  return { rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 };
}

// ---------------------------------------------------------------------------------------------------------------
// Scenarios and their checks.

const MESSAGES = [
  { role: 'system', content: 'You are a concise assistant. Answer in one short sentence.' },
  { role: 'user', content: 'Summarise in a few words why a gateway in front of several model providers is useful for a small team.' },
];

function streamText(body) {
  let text = '';
  let usage = false;
  for (const frame of body.split('\n\n')) {
    if (!frame.startsWith('data: ')) continue;
    const data = frame.slice(6);
    if (data === '[DONE]') continue;
    const chunk = JSON.parse(data);
    if (chunk.error) return null;
    if (chunk.usage) usage = true;
    text += chunk.choices?.[0]?.delta?.content ?? '';
  }
  return { text, usage, done: body.endsWith('data: [DONE]\n\n') };
}

const check = (fn) => (body) => {
  try {
    return fn(body);
  } catch {
    return false;
  }
};

const SCENARIOS = [
  {
    name: 'chat, non-streaming',
    method: 'POST',
    path: '/chat/completions',
    body: (model) => ({ model, messages: MESSAGES }),
    verify: check((b) => JSON.parse(b).choices[0].message.content === EXPECTED_TEXT),
    billed: 'chat',
  },
  {
    // The same with one connection: no queueing in the gateway, so the difference is its own work per request.
    name: 'chat, non-streaming, 1 connection',
    method: 'POST',
    path: '/chat/completions',
    connections: 1,
    body: (model) => ({ model, messages: MESSAGES }),
    verify: check((b) => JSON.parse(b).choices[0].message.content === EXPECTED_TEXT),
    billed: 'chat',
  },
  {
    name: 'chat, streaming (to last byte)',
    method: 'POST',
    path: '/chat/completions',
    body: (model) => ({ model, messages: MESSAGES, stream: true, stream_options: { include_usage: true } }),
    verify: check((b) => {
      const s = streamText(b);
      return !!s && s.done && s.usage && s.text === EXPECTED_TEXT;
    }),
    billed: 'chat',
  },
  {
    name: 'GET /v1/models',
    method: 'GET',
    path: '/models',
    verify: check((b) => JSON.parse(b).data.length >= 1),
  },
];

function percentile(sorted, q) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** One autocannon run; latencies of 2xx answers kept at full (sub-millisecond) resolution. */
async function drive({ url, key, scenario, model, seconds, pids }) {
  const latencies = [];
  const before = { wall: performance.now(), busy: safe(machineBusyMs, NaN), cpu: Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)])), self: process.cpuUsage() };
  const inst = autocannon({
    url: url + scenario.path,
    method: scenario.method,
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    ...(scenario.body ? { body: JSON.stringify(scenario.body(model)) } : {}),
    connections: scenario.connections ?? CONNECTIONS,
    duration: seconds,
    timeout: 10,
    verifyBody: scenario.verify,
  });
  inst.on('response', (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) latencies.push(ms);
  });
  const r = await inst;
  const wall = performance.now() - before.wall;
  const self = process.cpuUsage(before.self);
  const busy = safe(machineBusyMs, NaN) - before.busy;
  latencies.sort((a, b) => a - b);
  const ok = latencies.length;
  const cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, safe(() => cpuMs(pid), NaN) - before.cpu[k]]));
  return {
    ok,
    rps: ok / (wall / 1000),
    p50: percentile(latencies, 0.5),
    p95: percentile(latencies, 0.95),
    p99: percentile(latencies, 0.99),
    max: latencies[ok - 1],
    non2xx: r.non2xx,
    statusCodes: r.statusCodeStats,
    errors: r.errors,
    timeouts: r.timeouts,
    mismatches: r.mismatches,
    cpuPerReq: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, ok ? v / ok : NaN])),
    cpuShare: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, v / wall])),
    driverCpuShare: (self.user + self.system) / 1000 / wall,
    // What the rest of the machine (other users of the shared cores, the database server) used meanwhile.
    othersCpuShare: (busy - (self.user + self.system) / 1000 - Object.values(cpu).reduce((a, b) => a + b, 0)) / wall,
  };
}

// ---------------------------------------------------------------------------------------------------------------

function machine() {
  const cpuinfo = safe(() => fs.readFileSync('/proc/cpuinfo', 'utf8'), '');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const nproc = safe(() => execSync('nproc').toString().trim(), String(os.availableParallelism()));
  return { nproc, model, node: process.version, kernel: `${os.type()} ${os.release()}`, memGiB: (os.totalmem() / 2 ** 30).toFixed(1) };
}

function fsType(dir) {
  const mounts = safe(() => fs.readFileSync('/proc/mounts', 'utf8'), '')
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f.length > 2 && (dir === f[1] || dir.startsWith(f[1].endsWith('/') ? f[1] : `${f[1]}/`)));
  mounts.sort((a, b) => b[1].length - a[1].length);
  return mounts[0]?.[2] ?? 'unknown';
}

const f1 = (n) => (Number.isFinite(n) ? n.toFixed(1) : 'n/a');
const f2 = (n) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
const signed = (n) => (Number.isFinite(n) ? `${n >= 0 ? '+' : ''}${n.toFixed(2)}` : 'n/a');

async function main() {
  if (!fs.existsSync(CLI)) throw new Error('dist/cli.js is missing: run `npm run build` (or `make build`) first');
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-'));
  const databaseUrl = process.env.BENCH_DATABASE_URL || `sqlite:${path.join(tmpDir, 'bench.db')}`;
  const dbLabel = databaseUrl.startsWith('sqlite:')
    ? `SQLite (better-sqlite3, WAL), file on ${fsType(path.dirname(path.resolve(databaseUrl.slice('sqlite:'.length))))}`
    : `MySQL/MariaDB ${databaseUrl.replace(/\/\/[^@/]*@/, '//')}`;
  const mach = machine();
  const loadBefore = os.loadavg();
  const started = new Date();

  const upstream = await startUpstream();
  const configFile = path.join(tmpDir, 'switchyard.yaml');
  fs.writeFileSync(
    configFile,
    [
      'providers:',
      `  fake: { type: openai, base_url: "${upstream.url}", api_key: bench }`,
      'models:',
      `  - id: ${MODEL}`,
      '    kind: chat',
      '    owned_by: bench',
      '    price: { input: 0.15, output: 0.60 }',
      '    routes: [ { provider: fake, model: fake-chat } ]',
      '',
    ].join('\n'),
  );
  const env = { ...process.env, DATABASE_URL: databaseUrl, SWITCHYARD_CONFIG: configFile, LOG_LEVEL: 'warn' };
  delete env.REDIS_URL; // in-memory rate-limit counters: the benchmark measures one process

  const account = await cli(env, 'accounts', 'create', '--email', `bench-${process.pid}-${Date.now()}@switchyard.local`, '--credits', CREDITS_USD);
  if (account.code !== 0) throw new Error(`accounts create failed: ${account.stderr}`);
  // Per-key limits far above anything the benchmark sends (they still run: the limiter is part of the overhead).
  const key = await cli(env, 'keys', 'create', '--account', String(account.json.id), '--name', 'bench', '--rpm', '100000000', '--tpm', '2000000000');
  if (key.code !== 0) throw new Error(`keys create failed: ${key.stderr}`);

  const profDir = PROFILE ? path.join(tmpDir, 'prof') : null;
  const gw = await startGateway(env, await freePort(), profDir);
  await waitReady(gw, key.json.key);
  const pids = { gateway: gw.child.pid, upstream: upstream.child.pid };

  const rows = [];
  const billedExpect = { ok: 0, slack: 0 }; // 2xx the clients saw on paid requests through the gateway, and in-flight at stops
  const only = (process.env.BENCH_ONLY ?? '').split(';').map((x) => x.trim()).filter(Boolean);
  const scenarios = SCENARIOS.filter((s) => !only.length || only.some((o) => s.name.includes(o)));
  if (!scenarios.length) throw new Error(`BENCH_ONLY=${process.env.BENCH_ONLY} matches no scenario: ${SCENARIOS.map((s) => s.name).join('; ')}`);
  for (const scenario of scenarios) {
    for (const target of ['direct', 'gateway']) {
      const via = target === 'direct' ? { url: upstream.url, key: null, model: 'fake-chat' } : { url: gw.url, key: key.json.key, model: MODEL };
      process.stderr.write(`bench: ${scenario.name} via ${target}: ${WARMUP} s warm-up, ${DURATION} s measured\n`);
      const runs = [];
      if (WARMUP > 0) runs.push(await drive({ ...via, scenario, seconds: WARMUP, pids }));
      const r = await drive({ ...via, scenario, seconds: DURATION, pids });
      runs.push(r);
      if (target === 'gateway' && scenario.billed) {
        for (const x of runs) billedExpect.ok += x.ok;
        billedExpect.slack += runs.length * (scenario.connections ?? CONNECTIONS);
      }
      const bad = runs.reduce((n, x) => n + x.non2xx + x.errors + x.timeouts + x.mismatches, 0);
      rows.push({ scenario: scenario.name, target, ...r, badAll: bad, warmupBad: bad - (r.non2xx + r.errors + r.timeouts + r.mismatches) });
      process.stderr.write(
        `bench:   ${f1(r.rps)} req/s, p50 ${f2(r.p50)} ms, p99 ${f2(r.p99)} ms, non-2xx ${r.non2xx}, errors ${r.errors}, bad bodies ${r.mismatches}\n`,
      );
    }
  }

  // Let settlements of the requests cut off at the end of the last paid run finish, then read memory and stop.
  await new Promise((r) => setTimeout(r, 1000));
  const mem = memory(gw.child.pid);
  gw.child.kill('SIGTERM');
  const gwExit = await waitExit(gw.child, 40_000);
  upstream.child.kill('SIGTERM');
  await waitExit(upstream.child, 5_000);

  // Billing after the run: the usage records against what the clients saw, open holds, and `ledger verify`.
  const verify = await cli(env, 'ledger', 'verify');
  const { connect } = require(path.join(ROOT, 'dist', 'db', 'index.js'));
  const db = connect(databaseUrl);
  let billing;
  try {
    const accountId = account.json.id;
    const usage = await db('usage_records').where('account_id', accountId).select('status').count({ n: '*' }).sum({ cost: 'cost_micros' }).groupBy('status');
    const wrongTokens = await db('usage_records')
      .where({ account_id: accountId, status: 200 })
      .andWhere((q) => q.whereNot('prompt_tokens', 42).orWhereNot('completion_tokens', 12))
      .count({ n: '*' })
      .first();
    const holds = await db('holds').where('account_id', accountId).count({ n: '*' }).first();
    const ledger = await db('ledger').where({ account_id: accountId, kind: 'usage' }).count({ n: '*' }).sum({ amount: 'amount_micros' }).first();
    const acct = await db('accounts').where('id', accountId).first('balance_micros', 'held_micros');
    const byStatus = Object.fromEntries(usage.map((u) => [String(u.status), { n: Number(u.n), cost: Number(u.cost) }]));
    const billed200 = byStatus['200']?.n ?? 0;
    const usageCost = Object.values(byStatus).reduce((s, u) => s + u.cost, 0);
    billing = {
      byStatus,
      billed200,
      wrongTokens: Number(wrongTokens.n),
      openHolds: Number(holds.n),
      ledgerRows: Number(ledger.n),
      ledgerCost: -Number(ledger.amount ?? 0),
      usageCost,
      spent: Number(CREDITS_USD) * 1e6 - Number(acct.balance_micros),
      held: Number(acct.held_micros),
    };
    billing.countsOk = billed200 >= billedExpect.ok && billed200 <= billedExpect.ok + billedExpect.slack;
    billing.ok =
      verify.code === 0 &&
      billing.countsOk &&
      billing.wrongTokens === 0 &&
      billing.openHolds === 0 &&
      billing.held === 0 &&
      billing.ledgerCost === billing.usageCost &&
      billing.spent === billing.ledgerCost;
  } finally {
    await db.destroy();
  }

  const report = render({ rows, mach, dbLabel, loadBefore, loadAfter: os.loadavg(), started, mem, gwExit, verify, billing, billedExpect, gwLogs: gw.logs });
  process.stdout.write(`${report}\n`);
  if (OUT !== '-') {
    fs.writeFileSync(OUT, `${report}\n`);
    process.stderr.write(`bench: report written to ${path.relative(process.cwd(), OUT) || OUT}\n`);
  }
  if (profDir) printProfile(profDir);

  const clean = rows.every((r) => r.badAll === 0) && billing.ok && gwExit.code === 0;
  if (!clean) process.stderr.write('bench: FINDINGS: see the report (non-2xx, bad bodies, billing or shutdown)\n');
  process.exitCode = clean ? 0 : 1;
}

function render({ rows, mach, dbLabel, loadBefore, loadAfter, started, mem, gwExit, verify, billing, billedExpect, gwLogs }) {
  const L = [];
  L.push(`### Gateway overhead (${started.toISOString().slice(0, 16).replace('T', ' ')} UTC)`);
  L.push('');
  L.push(
    `Machine: ${mach.nproc} × ${mach.model}, ${mach.memGiB} GiB, ${mach.kernel}, Node ${mach.node}. Database: ${dbLabel}. ` +
      `Load average before / after: ${loadBefore.map((x) => x.toFixed(2)).join(' ')} / ${loadAfter.map((x) => x.toFixed(2)).join(' ')}.`,
  );
  L.push('');
  L.push(
    `Fake upstream think time ${THINK_MS} ms; autocannon ${CONNECTIONS} connections (unless the row says otherwise), ${DURATION} s per row after ${WARMUP} s warm-up; ` +
      'upstream, gateway and load generator are three processes on loopback sharing the same cores. ' +
      'Latency in ms (streaming: to the last byte); CPU = user + system time of the process per answered request.',
  );
  L.push('');
  L.push('| scenario | via | req/s | p50 | p95 | p99 | max | non-2xx / errors / bad bodies | gateway CPU ms/req | upstream CPU ms/req |');
  L.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    L.push(
      `| ${r.scenario} | ${r.target} | ${f1(r.rps)} | ${f2(r.p50)} | ${f2(r.p95)} | ${f2(r.p99)} | ${f2(r.max)} | ${r.non2xx} / ${r.errors + r.timeouts} / ${r.mismatches} | ` +
        `${r.target === 'gateway' ? f2(r.cpuPerReq.gateway) : '–'} | ${f2(r.cpuPerReq.upstream)} |`,
    );
  }
  L.push('');
  L.push('Overhead (gateway − direct, same scenario):');
  L.push('');
  L.push('| scenario | p50 ms | p95 ms | p99 ms | req/s | CPU during the gateway run: gateway / load generator / upstream / everything else (100 % = one core) |');
  L.push('|---|---:|---:|---:|---:|---:|');
  for (const s of SCENARIOS.filter((x) => rows.some((r) => r.scenario === x.name))) {
    const d = rows.find((r) => r.scenario === s.name && r.target === 'direct');
    const g = rows.find((r) => r.scenario === s.name && r.target === 'gateway');
    L.push(
      `| ${s.name} | ${signed(g.p50 - d.p50)} | ${signed(g.p95 - d.p95)} | ${signed(g.p99 - d.p99)} | ${f1(g.rps)} vs ${f1(d.rps)} (${((g.rps / d.rps - 1) * 100).toFixed(0)} %) | ${[g.cpuShare.gateway, g.driverCpuShare, g.cpuShare.upstream, Math.max(0, g.othersCpuShare)].map((x) => Math.round(x * 100)).join(' / ')} % |`,
    );
  }
  L.push('');
  L.push(`Gateway memory at the end: RSS ${f1(mem.rssMiB)} MiB (peak ${f1(mem.peakMiB)} MiB). Gateway exit on SIGTERM: ${gwExit.code ?? gwExit.signal}. Gateway log lines at warn or above: ${gwLogs.lines}.`);
  L.push('');
  const warm = rows.reduce((n, r) => n + r.warmupBad, 0);
  const s200 = billing.byStatus['200']?.n ?? 0;
  const others = Object.entries(billing.byStatus).filter(([k]) => k !== '200').map(([k, v]) => `${v.n} × ${k}`).join(', ');
  L.push(
    `Billing: \`switchyard ledger verify\` ${verify.code === 0 ? 'clean (exit 0)' : `FAILED (exit ${verify.code}): ${JSON.stringify(verify.json ?? verify.stderr)}`}; ` +
      `${s200} usage records with status 200 for ${billedExpect.ok} paid 2xx answers the clients received (up to ${billedExpect.slack} more were in flight when a run stopped)` +
      `${others ? `, plus ${others}` : ''}; ${billing.wrongTokens} metered with other tokens than the upstream reported; ` +
      `${billing.openHolds} open holds; charged ${billing.ledgerCost} µUSD in ${billing.ledgerRows} ledger rows, usage records ${billing.usageCost} µUSD, balance down ${billing.spent} µUSD` +
      `${billing.ok ? ' — consistent.' : ' — INCONSISTENT.'}` +
      (warm ? ` Warm-up runs had ${warm} non-2xx / errors / bad bodies.` : ''),
  );
  return L.join('\n');
}

/** Self time of the gateway's CPU profile by area (package, own module, Node internals) and by function. */
function printProfile(dir) {
  const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return process.stderr.write('bench: no CPU profile was written\n');
  const prof = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
  const dt = new Map();
  for (let i = 0; i < prof.samples.length; i++) dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
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
    const area = pkg ? pkg : url.includes('/dist/') ? `switchyard ${url.slice(url.indexOf('/dist/') + 6)}` : url.startsWith('node:') ? 'node internals' : functionName.startsWith('(') ? functionName : url ? 'other' : 'native / V8';
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    const fn = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/')}:${lineNumber + 1}` : ''}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
  }
  const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `| ${k} | ${(v / 1000).toFixed(0)} | ${((v / total) * 100).toFixed(1)} % |`);
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
  process.stdout.write(`${out.join('\n')}\n`);
}

main().catch((e) => {
  process.stderr.write(`bench: ${e.stack ?? e}\n`);
  killAll('SIGTERM');
  process.exitCode = 1;
});
