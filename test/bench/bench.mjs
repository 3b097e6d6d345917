/**
 * Gateway overhead benchmark (`make bench`, after `make build`; plain Node, runs the compiled dist/).
 *
 * What it measures: Switchyard against a bare Node reverse proxy (test/bench/proxy.mjs: node:http + a keep-alive
 * http.Agent, bodies piped, no logic), both in front of the same fake upstream (test/bench/upstream.mjs: OpenAI chat
 * and Responses, Anthropic Messages, no latency; streams send 20 chunks 5 ms apart), measured in the same round,
 * alternating targets. The bare proxy is the practical limit for any Node gateway on this machine, so results are
 * ratios / differences to it rather than absolute numbers, which on a shared machine mean little. The targets are
 * issue 20's (TARGETS below), judged per round and on the median of the rounds.
 *
 * Every timed run is preceded, for the same target, by an untimed check pass: BENCH_CHECK_N requests by a Node
 * client that reads every answer (status 200, its shape, the model asked for, the text, the usage), so the timed
 * runs can use load generators that only count (see load.mjs for which and why, measured): wrk without per-request
 * Lua for the runs at 1, 32 and 128 connections, h2load --h1 --rps for the fixed-rate runs, a node:http client for
 * the streams' time to first byte. CPU per request = user + system time of a process (/proc/<pid>/stat) over the run
 * ÷ the answers; the upstream's is reported too (it is the same for both targets). RSS: idle (after start-up and one
 * request, settled for a second), peak (VmHWM of the 128-connection runs, reset just before each) and the whole run's.
 *
 * For each database (BENCH_DATABASES: sqlite, a fresh file; mariadb, database switchyard_bench on
 * mysql://root@127.0.0.1:3306, dropped and re-created; postgres, BENCH_POSTGRES_URL, dropped and re-created, skipped
 * with a line in the report if `switchyard migrate` fails on it) it starts a fresh upstream, proxy and gateway,
 * creates an account and key with the CLI, runs every scenario BENCH_ROUNDS times against both targets, then stops
 * the gateway with SIGTERM, runs `switchyard ledger verify`, counts the usage records against the paid 2xx answers
 * and the open holds. Prints a Markdown report and writes it to test/bench/results.md.
 *
 * Environment (all optional):
 *   BENCH_ROUNDS=3           rounds per scenario              BENCH_DURATION=5    seconds measured per timed run
 *   BENCH_RATE_DURATION=10   seconds measured of the fixed-rate runs (paid chat, agents' bodies; default BENCH_DURATION
 *                            when that is set)
 *   BENCH_WARMUP=1           seconds of warm-up before each timed run (same command; the streaming client too)
 *   BENCH_CHECK_N=200        requests of the check pass before each timed run (16 at a time)
 *   BENCH_JIT_WARMUP=2000    requests of each kind (each body, streamed or not) sent to each target once, after
 *                            start-up and before the first round, checked like the check pass (16 at a time): V8
 *                            compiles a path only once it has run many times, so a kind of request that the rounds
 *                            send at a low rate (streams, the agents' bodies) would otherwise be measured while its
 *                            path is still being compiled — up to twice the cost of the same path warm (README)
 *   BENCH_RATE=2000          req/s of the fixed-rate paid chat run (h2load --rps), over BENCH_RATE_CONNECTIONS=32
 *   BENCH_AGENT_RATE=100     req/s of the agent-body runs (h2load --rps), over 20 connections
 *   BENCH_STREAM_N=200       streaming requests per time-to-first-byte run (4 connections)
 *   BENCH_DATABASES          comma-separated, of sqlite, mariadb and postgres (default sqlite,mariadb)
 *   BENCH_POSTGRES_URL       default postgres://postgres@127.0.0.1:5432/switchyard_bench (its database is dropped)
 *   BENCH_ONLY='a;b'         only the scenarios whose name or id contains one of these substrings (e.g. 'agent')
 *   BENCH_OUT                where to write the report (default test/bench/results.md; "-" for nowhere)
 *   BENCH_STRICT=1           exit 1 when a target is missed (otherwise only when something broke)
 *   BENCH_PROFILE=1          run the gateway under --cpu-prof and print its top functions by self time (numbers are
 *                            then slowed by the profiler, so the report is not written unless BENCH_OUT says where)
 *   BENCH_NODE_FLAGS         Node's flags for the gateway (default none, as `switchyard serve` starts; e.g.
 *                            '--max-semi-space-size=2')
 *   BENCH_ROOT               the Switchyard checkout whose dist/ is run (default: the repository this file is in)
 *   BENCH_KEEP=1             keep the temporary directory (database, configuration, bodies, h2load logs, profiles)
 *
 * A default run (3 rounds, 10 scenarios, two databases) takes 15–25 minutes: 24.6 minutes measured on a shared 2-core
 * VM with a load average of 18–28 (2026-11-27); about 2.5 minutes a round and database are timed runs and streams, the
 * rest check passes and start-up, which a quiet machine does faster.
 */
import { spawn, spawnSync, execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { messagesBody, responsesBody } from './bodies.mjs';
import { WRK_LUA, h2loadArgs, parseH2load, parseWrk, runCheck, runStream, runTool, wrkArgs } from './load.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const ROOT = path.resolve(process.env.BENCH_ROOT || REPO);
const CLI = path.join(ROOT, 'dist', 'cli.js');
const UPSTREAM = path.join(HERE, 'upstream.mjs');
const PROXY = path.join(HERE, 'proxy.mjs');

const num = (name, dflt, { min = 0, int = false } = {}) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || (int && !Number.isInteger(n)))
    throw new Error(`${name} must be ${int ? 'a whole number' : 'a number'} ≥ ${min}`);
  return n;
};
/** Numbers as the report shows them. */
const f0 = (n) => (Number.isFinite(n) ? n.toFixed(0) : 'n/a');
const f1 = (n) => (Number.isFinite(n) ? n.toFixed(1) : 'n/a');
const f2 = (n) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');

const ROUNDS = num('BENCH_ROUNDS', 3, { min: 1, int: true });
const DURATION = num('BENCH_DURATION', 5, { min: 1, int: true }); // wrk takes whole seconds
/** The fixed-rate run is the steady measure of overhead: longer, unless a short run was asked for. */
const RATE_DURATION = num('BENCH_RATE_DURATION', process.env.BENCH_DURATION ? DURATION : 10, { min: 1, int: true });
const WARMUP = num('BENCH_WARMUP', 1, { int: true });
const CHECK_N = num('BENCH_CHECK_N', 200, { min: 1, int: true });
const CHECK_CONNECTIONS = 16;
const JIT_WARMUP = num('BENCH_JIT_WARMUP', 2000, { int: true });
const RATE = num('BENCH_RATE', 2000, { min: 1 });
const RATE_CONNECTIONS = num('BENCH_RATE_CONNECTIONS', 32, { min: 1, int: true });
const AGENT_RATE = num('BENCH_AGENT_RATE', 100, { min: 1 });
const AGENT_CONNECTIONS = 20;
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
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/switchyard_bench';
const CREDITS_USD = '1000';
/** Switchyard's model names, and the upstream's own, which the bare proxy's clients use. */
const MODELS = {
  gateway: { chat: 'bench-chat', claude: 'bench-claude' },
  proxy: { chat: 'fake-chat', claude: 'fake-claude' },
};
const MESSAGES = [
  { role: 'system', content: 'You are a concise assistant.' },
  { role: 'user', content: 'Say hello in one short sentence.' },
];
/** Claude Code's own headers (beside the key) on /v1/messages. */
const ANTHROPIC_HEADERS = [
  'anthropic-version: 2023-06-01',
  'anthropic-beta: claude-code-20250219,interleaved-thinking-2025-05-14',
];

// ---------------------------------------------------------------------------------------------------------------
// Scenarios. tool: wrk (at a concurrency), h2load (at a fixed rate), stream (time to first byte). wire: which body
// is sent and how the check pass judges the answers (load.mjs JUDGE); paid: the gateway bills it.

const WIRES = {
  models: { method: 'GET', path: '/models', model: 'chat' },
  chat: { path: '/chat/completions', model: 'chat', body: (model) => JSON.stringify({ model, messages: MESSAGES }) },
  chatStream: {
    path: '/chat/completions',
    model: 'chat',
    body: (model) =>
      JSON.stringify({ model, messages: MESSAGES, stream: true, stream_options: { include_usage: true } }),
  },
  messages: { path: '/messages', model: 'claude', body: (m) => messagesBody(m, false), headers: ANTHROPIC_HEADERS },
  messagesStream: {
    path: '/messages',
    model: 'claude',
    body: (m) => messagesBody(m, true),
    headers: ANTHROPIC_HEADERS,
  },
  responses: { path: '/responses', model: 'chat', body: (m) => responsesBody(m, false) },
  responsesStream: { path: '/responses', model: 'chat', body: (m) => responsesBody(m, true) },
};

const chat = (connections) => ({
  id: `chat${connections}`,
  name: `paid chat, ${connections} connection${connections > 1 ? 's' : ''}`,
  tool: 'wrk',
  wire: 'chat',
  connections,
  paid: true,
});
const agent = (id, name, wire) => ({
  id,
  name: `${name}, ${AGENT_RATE} req/s`,
  tool: 'h2load',
  wire,
  rate: AGENT_RATE,
  connections: AGENT_CONNECTIONS,
  // as long as the fixed-rate chat run: at 100 req/s, 5 s gave 500 answers, CPU known to ±20 µs (the clock ticks
  // every 10 ms), and ratios that moved by 0.5× from round to round
  seconds: RATE_DURATION,
  paid: true,
});
const SCENARIOS = [
  { id: 'models', name: 'GET /v1/models, 32 connections', tool: 'wrk', wire: 'models', connections: 32 },
  chat(1),
  chat(32),
  { ...chat(128), peakRss: true },
  {
    id: 'fixed',
    name: `paid chat at a fixed ${RATE} req/s, ${RATE_CONNECTIONS} connections`,
    tool: 'h2load',
    wire: 'chat',
    rate: RATE,
    connections: RATE_CONNECTIONS,
    seconds: RATE_DURATION,
    paid: true,
  },
  {
    id: 'stream',
    name: `streaming chat, ${STREAM_CONNECTIONS} connections`,
    tool: 'stream',
    wire: 'chatStream',
    connections: STREAM_CONNECTIONS,
    paid: true,
  },
  agent('agentMessages', 'agent: Claude Code /v1/messages (87 KB)', 'messages'),
  agent('agentMessagesStream', 'agent: Claude Code /v1/messages (87 KB), streamed', 'messagesStream'),
  agent('agentResponses', 'agent: Codex /v1/responses (60 KB)', 'responses'),
  agent('agentResponsesStream', 'agent: Codex /v1/responses (60 KB), streamed', 'responsesStream'),
];

/**
 * Issue 20's goals. Per-round targets compare Switchyard with the proxy in the same round (ratio: Switchyard ÷
 * proxy; diff: Switchyard − proxy, in ms); rss targets are Switchyard's own, once per database.
 */
const cpuOf = (r) => r.cpu.self;
const TARGETS = [
  {
    scenario: 'fixed',
    what: 'CPU per paid chat request (fixed rate), µs',
    get: cpuOf,
    cmp: 'ratio',
    max: 1.6,
    fmt: f0,
  },
  { scenario: 'stream', what: 'stream time to first byte, p50 ms', get: (r) => r.p50, cmp: 'diff', max: 1 },
  { scenario: 'stream', what: 'CPU per stream, µs', get: cpuOf, cmp: 'ratio', max: 1.5, fmt: f0 },
  {
    scenario: 'chat128',
    what: 'p99 at 128 connections, ms (a goal for MariaDB)',
    get: (r) => r.p99,
    cmp: 'ratio',
    max: 2,
    dbs: ['mariadb'],
  },
  ...SCENARIOS.filter((s) => s.id.startsWith('agent')).map((s) => ({
    scenario: s.id,
    what: `CPU per request, ${s.name.replace(/^agent: /, '').replace(/, \d+ req\/s$/, '')}, µs`,
    get: cpuOf,
    cmp: 'ratio',
    max: 2,
    fmt: f0,
  })),
  { rss: 'idle', what: 'RSS idle, MB', max: 100 },
  { rss: 'peak', what: 'RSS peak during the 128-connection runs (highest round), MB', max: 160 },
  { rss: 'lifetime', what: 'RSS peak over the whole run (every scenario; no goal), MB' },
];

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

/** VmRSS (resident set now) in MB. */
function rssMB(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return (Number(/^VmRSS:\s+(\d+) kB/m.exec(s)?.[1] ?? NaN) * 1024) / 1e6;
}

const cpuAll = (pids) => Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, safe(() => cpuMs(pid), NaN)]));

// ---------------------------------------------------------------------------------------------------------------
// One scenario against one target: the check pass, then the warm-up and the timed run.

const shq = (s) => (/^\$?[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** What a target is sent for a scenario: URL, headers (the key shown as $KEY in the report), body and its file. */
function request(s, t) {
  const w = WIRES[s.wire];
  const model = MODELS[t.name][w.model];
  const body = w.body ? w.body(model) : null;
  let bodyFile = null;
  if (body) {
    bodyFile = path.join(tmpDir, `${s.wire}-${t.name}.json`);
    if (!fs.existsSync(bodyFile)) fs.writeFileSync(bodyFile, body);
  }
  const headers = [
    `Authorization: Bearer ${t.key}`,
    ...(body ? ['Content-Type: application/json'] : []),
    ...(w.headers ?? []),
  ];
  return { url: t.url + w.path, method: w.method ?? 'POST', headers, body, bodyFile, model, judge: s.wire };
}

/** The load generator's command line as a reader can run it. */
function commandLine(tool, { args, env }, key) {
  const rel = (a) => (a.startsWith(tmpDir) ? `$TMP/${path.basename(a)}` : a === WRK_LUA ? path.relative(REPO, a) : a);
  const envText = Object.entries(env).map(([k, v]) => `${k}=${rel(v)} `);
  const words = args.map((a) => (a.includes(key) ? `"${a.replace(key, '$KEY')}"` : shq(rel(a))));
  return `${envText.join('')}${tool} ${words.filter((w) => !w.startsWith('--log-file')).join(' ')}`;
}

/** One timed run (or warm-up) of wrk or h2load; its counts, latencies and CPU per answer of each process. */
async function timedRun(s, req, seconds, pids, target) {
  const logFile = s.tool === 'h2load' ? path.join(tmpDir, `h2load-${s.id}-${target}.log`) : null;
  const opts = { ...req, connections: s.connections, seconds, rate: s.rate, logFile };
  const cmd = s.tool === 'wrk' ? wrkArgs(opts) : h2loadArgs(opts);
  if (logFile) fs.rmSync(logFile, { force: true }); // h2load appends to its log
  const before = cpuAll(pids);
  const out = await runTool(s.tool, cmd, track, waitExit, seconds);
  const after = cpuAll(pids);
  const r = s.tool === 'wrk' ? parseWrk(out) : parseH2load(out, logFile);
  if (!r) throw new Error(`${s.tool}: unreadable output: ${out.trim().split('\n').slice(-5).join(' / ')}`);
  return { ...r, rps: r.answered2xx / r.seconds, cpu: cpuPer(before, after, r.requests, target), cmd };
}

/** µs of CPU per answer: of the target itself (self), of the upstream, and of the other target (idle, in theory). */
function cpuPer(before, after, n, target) {
  const per = (k) => (n ? ((after[k] - before[k]) * 1000) / n : NaN);
  return { self: per(target), upstream: per('upstream'), proxy: per('proxy'), gateway: per('gateway') };
}

async function streamRun(req, opts, pids, target) {
  const before = cpuAll(pids);
  const r = await runStream({ ...req, connections: STREAM_CONNECTIONS, ...opts });
  return { ...r, rps: NaN, cpu: cpuPer(before, cpuAll(pids), r.requests, target) };
}

/** The check pass, the warm-up and the measured run of scenario `s` against target `t`; the measured run. */
async function runScenario(res, s, t, round, pids) {
  const tag = `${res.db} round ${round}/${ROUNDS}: ${s.name} via ${t.name === 'proxy' ? 'bare proxy' : 'Switchyard'}`;
  const req = request(s, t);
  const seconds = s.seconds ?? DURATION;
  const check = await checkedPass(res, s, t, req, CHECK_N, `${tag}: check pass`);
  const paid = t.name === 'gateway' && s.paid;
  const runs = [];
  if (s.tool === 'stream') {
    process.stderr.write(`bench: ${tag}: checked ${check.ok}/${CHECK_N}; ${WARMUP} s warm-up, ${STREAM_N} streams\n`);
    if (WARMUP > 0) runs.push(await streamRun(req, { seconds: WARMUP }, pids, t.name));
    runs.push(await streamRun(req, { count: STREAM_N }, pids, t.name));
  } else {
    process.stderr.write(`bench: ${tag}: checked ${check.ok}/${CHECK_N}; ${WARMUP} s warm-up, ${seconds} s measured\n`);
    if (WARMUP > 0) runs.push(await timedRun(s, req, WARMUP, pids, t.name));
    runs.push(await timedRun(s, req, seconds, pids, t.name));
    if (round === 1) res.commands.push(commandLine(s.tool, runs.at(-1).cmd, t.key));
  }
  for (const x of runs) {
    if (paid) res.paid.answered2xx += x.answered2xx;
    if (paid && s.tool !== 'stream') res.paid.slack += s.connections; // in flight when the tool stopped
    const what = x === runs.at(-1) ? 'measured run' : 'warm-up';
    if (!x.requests) res.broken.push(`${tag} (${what}): no answers at all`);
    if (x.non2xx || x.bad || x.sockErrors)
      res.broken.push(
        `${tag} (${what}): ${x.non2xx} non-2xx, ${x.bad ?? 0} bad bodies, ${x.sockErrors} socket errors${x.errorText ? ` (${x.errorText})` : ''}`,
      );
  }
  const r = runs.at(-1);
  process.stderr.write(
    `bench:   ${s.tool === 'stream' ? `TTFB p50 ${f2(r.p50)} ms` : `${f0(r.rps)} req/s, p50 ${f2(r.p50)} ms, p99 ${f2(r.p99)} ms`}, ` +
      `CPU ${f0(r.cpu.self)} µs/req (upstream ${f0(r.cpu.upstream)}); non-2xx ${r.non2xx}, socket errors ${r.sockErrors}\n`,
  );
  return { ...r, cmd: undefined };
}

/**
 * `count` requests of scenario `s` to target `t` by the checking client (CHECK_CONNECTIONS at a time): the gateway's
 * paid answers are counted for the usage-record check, and wrong answers reported under `tag`.
 */
async function checkedPass(res, s, t, req, count, tag) {
  const check = await runCheck({ ...req, count, connections: CHECK_CONNECTIONS });
  if (t.name === 'gateway' && s.paid) res.paid.answered2xx += check.answered2xx;
  if (check.ok !== check.requests || check.requests !== count)
    res.broken.push(`${tag}: ${count - check.ok} of ${count} answers wrong: ${check.failures.join(' | ')}`);
  return check;
}

/** Resident memory of both targets after start-up and one paid request each, settled for a second. */
async function idleRss(targets, pids) {
  for (const t of Object.values(targets)) {
    const req = request(
      SCENARIOS.find((s) => s.id === 'chat1'),
      t,
    );
    const check = await runCheck({ ...req, count: 1, connections: 1 });
    if (check.ok !== 1) throw new Error(`the first request via ${t.name} failed: ${check.failures.join(' | ')}`);
  }
  await new Promise((r) => setTimeout(r, 1000));
  return { proxy: safe(() => rssMB(pids.proxy), NaN), gateway: safe(() => rssMB(pids.gateway), NaN) };
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
    '  fake-anthropic:',
    '    type: anthropic',
    `    base_url: "${upstreamUrl}"`,
    '    api_key: bench',
    '    max_connections: 256',
    'limits: { rpm: 0, tpm: 0 }          # no per-key limits',
    'models:',
    `  - id: ${MODELS.gateway.chat}`,
    '    kind: chat',
    '    owned_by: bench',
    '    price: { input: 0.15, output: 0.60 }',
    `    routes: [ { provider: fake, model: ${MODELS.proxy.chat} } ]`,
    `  - id: ${MODELS.gateway.claude}`,
    '    kind: chat',
    '    owned_by: bench',
    '    price: { input: 3, output: 15 }',
    `    routes: [ { provider: fake-anthropic, model: ${MODELS.proxy.claude} } ]`,
    '',
  ].join('\n');
}

async function psql(url, sql) {
  const { stdout } = await execFileP('psql', [
    url,
    '-X',
    '-q',
    '-A',
    '-t',
    '-F',
    '\t',
    '-v',
    'ON_ERROR_STOP=1',
    '-c',
    sql,
  ]);
  return stdout;
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
  const u = new URL(POSTGRES_URL);
  const name = u.pathname.slice(1);
  const admin = Object.assign(new URL(POSTGRES_URL), { pathname: '/postgres' }).href;
  let version;
  try {
    version = (await psql(admin, 'SHOW server_version')).trim();
    await psql(admin, `DROP DATABASE IF EXISTS "${name}"`);
    await psql(admin, `CREATE DATABASE "${name}"`);
  } catch (e) {
    throw new Error(
      `PostgreSQL is not usable at ${u.host} (${String(e.stderr || e.message).trim()}); set BENCH_POSTGRES_URL`,
    );
  }
  return { url: POSTGRES_URL, label: `PostgreSQL ${version} on ${u.host}, database ${name} (dropped and re-created)` };
}

/** Usage records by status and open holds, read straight from the database after the gateway exited. */
async function countUsage(db, database) {
  if (db === 'sqlite') {
    const { sqliteDriver } = createRequire(import.meta.url)(path.join(ROOT, 'dist', 'db', 'sqlite.js'));
    const Database = sqliteDriver(); // better-sqlite3 12 or 13, as the gateway picks it on this Node
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
  // psql -c shows only the last result of several statements: one -c each.
  const [byStatusSql, holdsSql] = [
    'SELECT status, COUNT(*) FROM usage_records GROUP BY status',
    "SELECT 'holds', COUNT(*) FROM holds",
  ];
  const out =
    db === 'mariadb'
      ? await mariadb(
          `${byStatusSql.replace('FROM ', `FROM ${MARIADB.database}.`)}; ${holdsSql.replace('FROM ', `FROM ${MARIADB.database}.`)}`,
        )
      : (await psql(database.url, byStatusSql)) + (await psql(database.url, holdsSql));
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

/** A skipped database: the report says why in one line, and the run does not count it as broken. */
class Skip extends Error {}

/** Migrates, then creates the bench account and its key with the CLI; the key. */
async function accountKey(db, env) {
  const migrated = await cli(env, 'migrate');
  if (migrated.code !== 0) {
    const why = String(migrated.stderr || migrated.stdout)
      .trim()
      .split('\n')[0];
    if (db === 'postgres') throw new Skip(`\`switchyard migrate\` failed on PostgreSQL, so it was skipped: ${why}`);
    throw new Error(`switchyard migrate failed (exit ${migrated.code}): ${why}`);
  }
  const email = `bench-${process.pid}-${Date.now()}@switchyard.local`;
  const account = await cli(env, 'accounts', 'create', '--email', email, '--credits', CREDITS_USD);
  if (account.code !== 0)
    throw new Error(`accounts create failed (exit ${account.code}): ${String(account.stderr).trim()}`);
  const created = await cli(env, 'keys', 'create', '--account', String(account.json.id), '--name', 'bench');
  if (created.code !== 0)
    throw new Error(`keys create failed (exit ${created.code}): ${String(created.stderr).trim()}`);
  return created.json.key;
}

/** Every round: each scenario against both targets, the order swapped every other round. */
async function rounds(res, scenarios, targets, pids) {
  await jitWarmup(res, scenarios, targets);
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 ? ['proxy', 'gateway'] : ['gateway', 'proxy'];
    for (const s of scenarios) {
      for (const name of order) {
        const pid = pids[name];
        // The goal is the peak of the 128-connection run itself: the high-water mark is read (for the whole run's
        // peak) and reset before it, so that what an earlier scenario (the agents' 87 KB bodies) reached is not
        // counted against it; the highest of the rounds is reported.
        if (s.peakRss) lifetimePeak(res, name, pid);
        if (s.peakRss) safe(() => fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'), null);
        const r = await runScenario(res, s, targets[name], round, pids);
        res.runs.push({ round, scenario: s.id, target: name, ...r });
        if (s.peakRss) {
          res.rss.peak ??= { proxy: NaN, gateway: NaN };
          res.rss.peak[name] = Math.max(
            safe(() => peakMB(pid), NaN),
            res.rss.peak[name] || 0,
          );
        }
      }
    }
  }
}

/**
 * Before the first round, JIT_WARMUP requests of every kind the scenarios send (each wire once, however many
 * scenarios share it), to each target, read and judged like the check pass; not timed. The rounds then measure what a
 * gateway that has run for a while costs, not V8 compiling it: measured on a rig of the bench's processes, the 87 KB
 * Claude Code body at 100 req/s cost the gateway 2,060, 1,350, 1,030, 1,090, 1,050 µs per request in five 10 s runs
 * after start-up (the proxy 560), and a stream 7,870 falling to 4,470 µs over six runs of 300. In the bench itself (two
 * alternated pairs of runs of the Claude Code scenarios) the gateway's cost per Claude Code request was 1,220–1,610 µs
 * with this pass and 1,750–2,440 without; the proxy's fell too (470–710 against 570–1,060), so the ratios moved less.
 */
async function jitWarmup(res, scenarios, targets) {
  if (!JIT_WARMUP) return;
  const wires = [...new Map(scenarios.map((s) => [s.wire, s])).values()];
  for (const s of wires) {
    for (const t of Object.values(targets)) {
      const tag = `${res.db} JIT warm-up: ${WIRES[s.wire].path} (${s.wire}) via ${t.name === 'proxy' ? 'bare proxy' : 'Switchyard'}`;
      const started = Date.now();
      const r = await checkedPass(res, s, t, request(s, t), JIT_WARMUP, tag);
      process.stderr.write(`bench: ${tag}: ${r.ok}/${JIT_WARMUP} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    }
  }
}

/** The highest resident set of the target's process seen so far over the whole run (read before a reset). */
function lifetimePeak(res, name, pid) {
  res.rss.lifetime ??= { proxy: NaN, gateway: NaN };
  res.rss.lifetime[name] = Math.max(
    safe(() => peakMB(pid), NaN),
    res.rss.lifetime[name] || 0,
  );
}

/** Stops the gateway the way an operator does, then checks the books. */
async function soundness(res, gw, env, db, database) {
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
  // A stream the load generator left when its run ended had sent its 200 already: the gateway bills what went out and
  // records it as 499 (the client left), so those count as answered too.
  const s499 = res.usage.byStatus['499'] ?? 0;
  res.usage.consistent =
    s200 + s499 >= res.paid.answered2xx && s200 <= res.paid.answered2xx + res.paid.slack && res.usage.holds === 0;
  if (!res.usage.consistent) res.broken.push(`usage records do not match the paid answers: ${usageText(res)}`);
}

async function benchDatabase(db, scenarios) {
  const res = { db, runs: [], commands: [], broken: [], paid: { answered2xx: 0, slack: 0 }, rss: {} };
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
    const key = await accountKey(db, env);

    const profDir = PROFILE ? path.join(tmpDir, `prof-${db}`) : null;
    gw = await startGateway(env, await freePort(), profDir);
    await waitReady(gw, key);
    const pids = { proxy: proxy.child.pid, gateway: gw.child.pid, upstream: upstream.child.pid };
    const targets = {
      proxy: { name: 'proxy', url: proxy.url, key },
      gateway: { name: 'gateway', url: gw.url, key },
    };
    res.rss.idle = await idleRss(targets, pids);
    res.paid.answered2xx += 1; // idleRss's paid request
    await rounds(res, scenarios, targets, pids);
    for (const name of ['proxy', 'gateway']) lifetimePeak(res, name, pids[name]);
    await soundness(res, gw, env, db, database);
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

const signed = (n) => (Number.isFinite(n) ? `${n >= 0 ? '+' : '−'}${Math.abs(n).toFixed(2)}` : 'n/a');
const DB_NAMES = { sqlite: 'SQLite', mariadb: 'MariaDB', postgres: 'PostgreSQL' };

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
    `(up to ${res.paid.slack} more were in flight when a load generator stopped); ${u.holds} open holds`
  );
}

const verdict = (x, max) => (!Number.isFinite(x) ? 'n/a' : x <= max ? 'met' : 'MISSED');
const pair = (res, round, id) => ({
  p: res.runs.find((r) => r.round === round && r.scenario === id && r.target === 'proxy'),
  g: res.runs.find((r) => r.round === round && r.scenario === id && r.target === 'gateway'),
});

/** Medians of each scenario's measured runs, per target. */
function scenarioRows(res, scenarios) {
  const rows = [];
  for (const s of scenarios) {
    const runs = (t) => res.runs.filter((r) => r.scenario === s.id && r.target === t);
    const m = (t, get) => median(runs(t).map(get));
    if (!runs('proxy').length) continue;
    const cp = m('proxy', cpuOf);
    const cg = m('gateway', cpuOf);
    const rate = s.tool === 'stream' ? '–' : `${f0(m('proxy', (r) => r.rps))} / ${f0(m('gateway', (r) => r.rps))}`;
    rows.push(
      `| ${s.name} | ${rate} | ${f2(m('proxy', (r) => r.p50))} / ${f2(m('proxy', (r) => r.p99))} | ` +
        `${f2(m('gateway', (r) => r.p50))} / ${f2(m('gateway', (r) => r.p99))} | ${f0(cp)} / ${f0(cg)} | ${f2(cg / cp)}× | ` +
        `${f0(m('proxy', (r) => r.cpu.upstream))} / ${f0(m('gateway', (r) => r.cpu.upstream))} |`,
    );
  }
  return rows;
}

/** Issue 20's targets for one database: the median and each round's verdict. */
function targetRows(res, scenarios) {
  const rows = [];
  for (const t of TARGETS) {
    if (t.rss) {
      const v = res.rss[t.rss];
      if (!v) continue;
      if (t.max === undefined) {
        rows.push({ row: `| ${t.what} | ${f1(v.proxy)} | ${f1(v.gateway)} | – | – | – | no goal |`, x: 'no goal' });
        continue;
      }
      const x = verdict(v.gateway, t.max);
      rows.push({ row: `| ${t.what} | ${f1(v.proxy)} | ${f1(v.gateway)} | – | ≤ ${t.max} MB | – | ${x} |`, x });
      continue;
    }
    if (!scenarios.some((s) => s.id === t.scenario)) continue;
    const per = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const { p, g } = pair(res, round, t.scenario);
      if (!p || !g) continue;
      const pv = t.get(p);
      const gv = t.get(g);
      per.push({ pv, gv, c: t.cmp === 'ratio' ? gv / pv : gv - pv });
    }
    if (!per.length) continue;
    const c = median(per.map((x) => x.c));
    const show = (n) => (t.cmp === 'ratio' ? `${f2(n)}×` : `${signed(n)} ms`);
    const judged = !t.dbs || t.dbs.includes(res.db);
    const judge = (n) => (judged ? verdict(n, t.max) : 'not a goal here');
    const fmt = t.fmt ?? f2;
    rows.push({
      row:
        `| ${t.what} | ${fmt(median(per.map((r) => r.pv)))} | ${fmt(median(per.map((r) => r.gv)))} | ${show(c)} | ` +
        `${t.cmp === 'ratio' ? `≤ ${t.max}× proxy` : `≤ proxy + ${t.max} ms`} | ${per.map((r) => `${show(r.c)} ${judged ? verdict(r.c, t.max) : ''}`.trim()).join(', ')} | ${judge(c)} |`,
      x: judge(c),
    });
  }
  return rows;
}

function perRoundRows(res, scenarios) {
  const rows = [];
  const fails = (r) => `${r.requests} / ${r.non2xx + (r.bad ?? 0) + r.sockErrors}`;
  for (const s of scenarios) {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const r of [pair(res, round, s.id).p, pair(res, round, s.id).g]) {
        if (!r) continue;
        rows.push(
          `| ${s.name} | ${round} | ${r.target === 'proxy' ? 'proxy' : 'Switchyard'} | ${s.tool === 'stream' ? '–' : f0(r.rps)} | ` +
            `${f2(r.p50)} / ${f2(r.p90)} / ${f2(r.p99)} | ${f0(r.cpu.self)} | ${f0(r.cpu.upstream)} | ${fails(r)} |`,
        );
      }
    }
  }
  return rows;
}

function soundnessText(res) {
  if (!res.gwExit) return null;
  return (
    `Gateway shutdown on SIGTERM: ${exitText(res.gwExit)}. \`switchyard ledger verify\`: ${res.verify.code === 0 ? 'exit 0 (clean)' : `exit ${res.verify.code} — FAILED`}. ` +
    `Usage: ${usageText(res)} — ${res.usage.consistent ? 'consistent' : 'INCONSISTENT'}. Gateway log lines at warn or above: ${res.gwLogs.lines}` +
    `${res.gwLogs.lines ? ` (first: \`${res.gwLogs.head[0].replace(/`/g, "'")}\`)` : ''}.`
  );
}

function databaseSection(res, scenarios, L) {
  L.push(`#### ${DB_NAMES[res.db]}: ${res.label}`, '');
  L.push("Issue 20's targets (median of the rounds; per round in order):", '');
  L.push('| target | bare proxy | Switchyard | ratio / difference | goal | per round | result |');
  L.push('|---|---:|---:|---:|---|---|---|');
  const targets = targetRows(res, scenarios);
  for (const t of targets) L.push(t.row);
  L.push('', 'Scenarios (medians; latency of a stream = its time to first byte; CPU = µs per answer):', '');
  L.push(
    '| scenario | req/s proxy / Switchyard | proxy p50 / p99 ms | Switchyard p50 / p99 ms | CPU proxy / Switchyard | CPU ratio | upstream CPU (proxy run / Switchyard run) |',
  );
  L.push('|---|---:|---:|---:|---:|---:|---:|');
  L.push(...scenarioRows(res, scenarios), '');
  L.push('<details><summary>Per round</summary>', '');
  L.push(
    '| scenario | round | target | req/s | p50 / p90 / p99 ms | CPU µs/answer | upstream CPU µs/answer | answers / failures |',
  );
  L.push('|---|---:|---|---:|---:|---:|---:|---:|');
  L.push(...perRoundRows(res, scenarios), '', '</details>', '');
  const sound = soundnessText(res);
  if (sound) L.push(sound, '');
  if (res.broken.length) L.push('Failures:', '', ...res.broken.map((b) => `- ${b}`), '');
  return targets;
}

function settingsText() {
  const changed = Object.entries({
    BENCH_ROUNDS: [ROUNDS, 3],
    BENCH_DURATION: [DURATION, 5],
    BENCH_RATE_DURATION: [RATE_DURATION, 10],
    BENCH_WARMUP: [WARMUP, 1],
    BENCH_CHECK_N: [CHECK_N, 200],
    BENCH_JIT_WARMUP: [JIT_WARMUP, 2000],
    BENCH_RATE: [RATE, 2000],
    BENCH_RATE_CONNECTIONS: [RATE_CONNECTIONS, 32],
    BENCH_AGENT_RATE: [AGENT_RATE, 100],
    BENCH_STREAM_N: [STREAM_N, 200],
  })
    .filter(([, [v, d]]) => v !== d)
    .map(([k, [v]]) => `${k}=${v}`);
  if (PROFILE) changed.push('BENCH_PROFILE=1 (slowed by the profiler)');
  if (process.env.BENCH_ONLY) changed.push(`BENCH_ONLY=${process.env.BENCH_ONLY}`);
  if (NODE_FLAGS.length) changed.push(`BENCH_NODE_FLAGS=${NODE_FLAGS.join(' ')}`);
  return changed.length ? `**Not the default settings** (${changed.join(', ')}): compare with care.` : null;
}

function render({ results, errors, skipped, scenarios, mach, loadBefore, loadAfter, started, finished }) {
  const L = [];
  const missed = [];
  L.push(`### Switchyard against a bare Node proxy (${started.toISOString().slice(0, 16).replace('T', ' ')} UTC)`, '');
  L.push(
    `Machine: ${mach.model}, nproc ${mach.nproc}, ${mach.memGiB} GiB, ${mach.kernel}; Node ${mach.node}; ${mach.tools}. ` +
      `Switchyard: ${mach.build}. Load average (1, 5, 15 min) before: ${loadBefore.map((x) => x.toFixed(2)).join(' ')}, after: ${loadAfter.map((x) => x.toFixed(2)).join(' ')}. ` +
      `The run took ${((finished - started) / 60_000).toFixed(1)} minutes.`,
    '',
  );
  L.push(
    'Setup: a fake upstream with no latency (`test/bench/upstream.mjs`: OpenAI chat and Responses, Anthropic Messages; streams ' +
      'send 20 chunks 5 ms apart), a bare Node reverse proxy in front of it (`test/bench/proxy.mjs`: node:http, a keep-alive ' +
      'agent with 256 sockets, bodies piped, no logic) and Switchyard (`switchyard serve`, two priced models, no rate limits, ' +
      'max_connections 256 to the upstream, log level warn), each its own process on 127.0.0.1, sharing the cores with the load ' +
      `generator. ${JIT_WARMUP ? `Before the first round, ${JIT_WARMUP} requests of each kind (each body, streamed or not) to each target, checked like the check pass and not timed, so that V8 has compiled every path measured. ` : ''}` +
      `${ROUNDS} round(s); in each, every scenario runs against the proxy and against Switchyard (order swapped every ` +
      `other round): first a check pass (${CHECK_N} requests, ${CHECK_CONNECTIONS} at a time, by a Node client that checks each ` +
      'answer: status 200, shape, model, text, usage), then a warm-up and the timed run with the command below. ' +
      `Timed runs: ${WARMUP} s warm-up then ${DURATION} s (the fixed-rate runs — paid chat and the agents' bodies — ${RATE_DURATION} s); streams: ${STREAM_N} requests, ${STREAM_CONNECTIONS} at a time (time to first ` +
      'byte, by a node:http client). Agent bodies (`test/bench/bodies.mjs`): an 87 KB Claude Code `/v1/messages` body to an ' +
      'Anthropic-wire route, a 60 KB Codex `/v1/responses` body to an OpenAI-wire route. CPU = user + system time of the ' +
      'process (/proc/<pid>/stat) over the run ÷ answers. Values are medians over the rounds; ratio = Switchyard ÷ proxy and ' +
      'difference = Switchyard − proxy, both per round, then the median. RSS idle: after start-up and one request, settled ' +
      'for a second; peak: VmHWM of the 128-connection run (reset with /proc/<pid>/clear_refs just before it; the ' +
      'highest round), and VmHWM over the whole run.',
    '',
  );
  const settings = settingsText();
  if (settings) L.push(settings, '');
  if (results[0]?.commands.length) {
    L.push(
      `Commands (${results[0].db}, round 1; warm-ups use ${WARMUP} s; $KEY is the bench key, which the bare proxy forwards; ` +
        '$TMP holds the bodies bench.mjs wrote; h2load also gets --log-file for the percentiles):',
      '',
      '```',
      ...results[0].commands,
      '```',
      '',
    );
  }
  for (const res of results) {
    const targets = databaseSection(res, scenarios, L);
    for (const t of targets) if (t.x === 'MISSED') missed.push(`${res.db}: ${t.row.split(' | ')[0].slice(2)}`);
  }
  for (const s of skipped) L.push(`#### ${DB_NAMES[s.db]}: skipped`, '', s.message, '');
  for (const e of errors) L.push(`#### ${DB_NAMES[e.db] ?? e.db}: did not complete`, '', `\`${e.message}\``, '');
  if (missed.length) L.push(`Targets missed: ${missed.length} (${missed.join('; ')}).`);
  else L.push(results.length ? 'All targets met.' : 'No results.');
  return { text: L.join('\n'), missed };
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
  const first = (cmd, arg) => {
    const v = spawnSync(cmd, [arg], { encoding: 'utf8' });
    return (
      `${v.stdout ?? ''}${v.stderr ?? ''}`
        .split('\n')[0]
        .replace(/\s*Copyright.*$/, '')
        .trim() || cmd
    );
  };
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
    tools: `${first('wrk', '-v')}; ${first('h2load', '--version')}`,
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

/** The scenarios BENCH_ONLY selects; refuses what cannot run. */
function preflight() {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`make build\` (or \`npm run build\`) first`);
  for (const [tool, pkg] of [
    ['wrk', 'wrk'],
    ['h2load', 'nghttp2-client'],
  ])
    if (spawnSync(tool, ['--help'], { stdio: 'ignore' }).error?.code === 'ENOENT')
      throw new Error(`${tool} is not installed: \`apt-get install ${pkg}\` (Debian/Ubuntu)`);
  const only = (process.env.BENCH_ONLY ?? '')
    .split(';')
    .map((x) => x.trim())
    .filter(Boolean);
  const scenarios = SCENARIOS.filter((s) => !only.length || only.some((o) => s.name.includes(o) || s.id.includes(o)));
  if (!scenarios.length)
    throw new Error(
      `BENCH_ONLY=${process.env.BENCH_ONLY} matches no scenario: ${SCENARIOS.map((s) => `${s.id} (${s.name})`).join('; ')}`,
    );
  for (const db of DATABASES)
    if (!DB_NAMES[db]) throw new Error(`BENCH_DATABASES: unknown database '${db}' (sqlite, mariadb, postgres)`);
  return scenarios;
}

async function main() {
  const scenarios = preflight();
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-'));
  const mach = machine();
  const loadBefore = os.loadavg();
  const started = new Date();
  const results = [];
  const errors = [];
  const skipped = [];
  for (const db of DATABASES) {
    try {
      results.push(await benchDatabase(db, scenarios));
    } catch (e) {
      if (interrupted) return;
      if (e instanceof Skip) {
        process.stderr.write(`bench: ${db}: ${e.message}\n`);
        skipped.push({ db, message: e.message });
        continue;
      }
      process.stderr.write(`bench: ${db}: ${e.stack ?? e}\n`);
      errors.push({ db, message: e.message ?? String(e) });
    }
  }
  if (interrupted) return;
  const report = { results, errors, skipped, scenarios, mach, loadBefore, loadAfter: os.loadavg(), started };
  const { text, missed } = render({ ...report, finished: new Date() });
  process.stdout.write(`${text}\n`);
  if (OUT !== '-') {
    fs.writeFileSync(OUT, `${text}\n`);
    process.stderr.write(`bench: report written to ${path.relative(process.cwd(), OUT) || OUT}\n`);
  }
  for (const res of results) if (res.profile) process.stdout.write(`\n#### ${res.db}\n${res.profile}`);

  const broken = errors.length + results.reduce((n, r) => n + r.broken.length, 0);
  if (broken) process.stderr.write(`bench: something broke (${broken} finding(s)): see the report\n`);
  if (STRICT && missed.length) process.stderr.write(`bench: BENCH_STRICT=1 and ${missed.length} target(s) missed\n`);
  process.exitCode = broken || (STRICT && missed.length) ? 1 : 0;
}

main().catch((e) => {
  if (interrupted) return;
  process.stderr.write(`bench: ${e.stack ?? e}\n`);
  killAll('SIGTERM');
  process.exitCode = 1;
});
