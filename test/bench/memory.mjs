/**
 * Resident memory of `switchyard serve` (after `make build`; plain Node, runs the compiled dist/), as the bench
 * configures it (one priced model on a zero-latency fake OpenAI upstream, log level warn):
 *
 *   idle   VmRSS 3 s after one paid chat (start-up, the first request's validators and routes, then nothing);
 *   peak   VmHWM after MEM_DURATION s of paid chat on 128 connections (wrk, test/bench/wrk.lua), with the CPU time
 *          per answered request over that run.
 *
 * `node test/bench/memory.mjs` prints one JSON line per database. Environment (all optional):
 *   MEM_DATABASES=sqlite,mariadb   MEM_DURATION=10   MEM_CONNECTIONS=128
 *   MEM_MARIADB_DB=switchyard_mem  (dropped and re-created on mysql://root@127.0.0.1:3306)
 *   MEM_NODE_FLAGS='...'           flags for the gateway's node (e.g. --max-semi-space-size=4)
 *   MEM_SNAPSHOT=1                 write a heap snapshot at idle (SIGUSR2) into the temporary directory, kept
 */
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);
const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const CLI = path.join(ROOT, 'dist', 'cli.js');
const DURATION = Number(process.env.MEM_DURATION || 10);
const CONNECTIONS = Number(process.env.MEM_CONNECTIONS || 128);
const FLAGS = (process.env.MEM_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
const SNAPSHOT = process.env.MEM_SNAPSHOT === '1';
const MARIADB_DB = process.env.MEM_MARIADB_DB || 'switchyard_mem';
const children = new Set();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-mem-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

const status = (pid, field) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
const cpuMs = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
};

async function upstream() {
  const child = track(
    spawn(process.execPath, [path.join(HERE, 'upstream.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] }),
  );
  const line = await new Promise((r) => readline.createInterface({ input: child.stdout }).once('line', r));
  return JSON.parse(line).url;
}

async function cli(env, ...args) {
  const { stdout } = await execFileP(process.execPath, [CLI, ...args], { env, cwd: ROOT });
  return JSON.parse(stdout);
}

async function database(db) {
  if (db === 'sqlite') return `sqlite:${path.join(tmp, 'mem.db')}`;
  await execFileP('mysql', ['-uroot', '-e', `DROP DATABASE IF EXISTS ${MARIADB_DB}; CREATE DATABASE ${MARIADB_DB}`]);
  return `mysql://root@127.0.0.1:3306/${MARIADB_DB}`;
}

async function chat(url, key) {
  const body = JSON.stringify({ model: 'bench-chat', messages: [{ role: 'user', content: 'Say hello.' }] });
  const res = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
  });
  if (res.status !== 200) throw new Error(`chat answered ${res.status}: ${await res.text()}`);
  await res.text();
}

async function measure(db) {
  const up = await upstream();
  const config = path.join(tmp, `${db}.yaml`);
  fs.writeFileSync(
    config,
    [
      'providers:',
      `  fake: { type: openai, base_url: "${up}", api_key: bench, max_connections: 256 }`,
      'limits: { rpm: 0, tpm: 0 }',
      'models:',
      '  - { id: bench-chat, kind: chat, owned_by: bench, price: { input: 0.15, output: 0.60 },',
      '      routes: [ { provider: fake, model: fake-chat } ] }',
      '',
    ].join('\n'),
  );
  const env = { ...process.env, DATABASE_URL: await database(db), SWITCHYARD_CONFIG: config, LOG_LEVEL: 'warn' };
  delete env.REDIS_URL;
  const account = await cli(env, 'accounts', 'create', '--email', `mem-${Date.now()}@x.test`, '--credits', '1000');
  const { key } = await cli(env, 'keys', 'create', '--account', String(account.id), '--name', 'mem');
  const port = 20000 + Math.floor(Math.random() * 20000);
  const snap = SNAPSHOT ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${tmp}`] : [];
  const gw = track(
    spawn(process.execPath, [...FLAGS, ...snap, CLI, 'serve', '--port', String(port), '--host', '127.0.0.1'], {
      env,
      cwd: tmp,
      stdio: ['ignore', 'inherit', 'inherit'],
    }),
  );
  const url = `http://127.0.0.1:${port}/v1`;
  const t0 = Date.now();
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (r.status === 200) break;
    } catch {}
    if (Date.now() - t0 > 90_000) throw new Error('the gateway did not start');
    await sleep(50);
  }
  const startMs = Date.now() - t0;
  const f0 = Date.now();
  await chat(url, key);
  const firstMs = Date.now() - f0;
  await sleep(3000);
  const idle = status(gw.pid, 'VmRSS');
  if (SNAPSHOT) {
    gw.kill('SIGUSR2');
    await sleep(8000);
  }
  const cpu0 = cpuMs(gw.pid);
  const body = JSON.stringify({
    model: 'bench-chat',
    messages: [{ role: 'user', content: 'Say hello in one short sentence.' }],
  });
  const wrk = track(
    spawn(
      'wrk',
      ['-t1', `-c${CONNECTIONS}`, `-d${DURATION}s`, '--timeout', '10s', '-s', path.join(HERE, 'wrk.lua')].concat([
        '-H',
        `Authorization: Bearer ${key}`,
        `${url}/chat/completions`,
        '--',
        'POST',
        body,
        'fixed benchmark',
      ]),
      { stdio: ['ignore', 'pipe', 'inherit'] },
    ),
  );
  let out = '';
  wrk.stdout.on('data', (d) => (out += d));
  await new Promise((r) => wrk.once('exit', r));
  const r = JSON.parse(
    out
      .split('\n')
      .find((l) => l.startsWith('WRK_JSON '))
      .slice(9),
  );
  const cpu = cpuMs(gw.pid) - cpu0;
  const peak = status(gw.pid, 'VmHWM');
  await sleep(3000);
  const after = status(gw.pid, 'VmRSS');
  gw.kill('SIGTERM');
  await new Promise((res) => gw.once('exit', res));
  for (const c of children) c.kill('SIGTERM');
  const f1 = (x) => Math.round(x * 10) / 10;
  return {
    db,
    flags: FLAGS.join(' '),
    start_ms: startMs,
    first_chat_ms: firstMs,
    idle_rss_mb: f1(idle),
    peak_rss_mb: f1(peak),
    rss_after_mb: f1(after),
    requests: r.requests,
    ok: r.ok,
    rps: Math.round(r.requests / (r.duration_us / 1e6)),
    p99_ms: r.latency_ms.p99,
    cpu_us_per_req: Math.round((cpu * 1000) / r.requests),
    ...(SNAPSHOT ? { snapshots: tmp } : {}),
  };
}

for (const db of (process.env.MEM_DATABASES || 'sqlite,mariadb').split(',')) {
  console.log(JSON.stringify(await measure(db.trim())));
}
if (!SNAPSHOT) fs.rmSync(tmp, { recursive: true, force: true });
process.exit(0);
