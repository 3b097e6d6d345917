/**
 * The load of the benchmark (test/bench/bench.mjs): the timed runs, which only count, and the untimed check pass
 * before each of them, which reads every answer.
 *
 * Load generators, chosen by measurement (2-core VM, 2026-11-27, a bare proxy in front of test/bench/upstream.mjs):
 * - wrk for the runs at a given concurrency, with no per-request Lua: GET runs plainly, POST runs with
 *   test/bench/wrk-body.lua, which only sets wrk.method and wrk.body once at start-up (no request/response
 *   functions, so wrk keeps its static request and never hands an answer to Lua). GET /v1/models, 32 connections,
 *   3 s, three alternations: the proxy used 112 / 97 / 97 µs per request plainly and 97 / 108 µs with a script
 *   that only sets wrk.method; wrk itself 25–26 µs plainly, 25–30 with it: no measurable cost. wrk prints latency
 *   percentiles (--latency), which h2load does not.
 * - h2load --h1 for the fixed-rate runs (--rps per client; wrk has no rate) and for the agent bodies, which it sends
 *   from a file (-d) and rates the same way: on a POST chat body at 32 connections it used 29 µs per request against
 *   wrk's 33 µs, the same within noise. Its per-request log (--log-file) gives the percentiles.
 * - the streaming time to first byte, which neither sees, by a node:http client (runStream).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { ANSWER } from './upstream.mjs';

export const WRK_LUA = new URL('./wrk-body.lua', import.meta.url).pathname;

/** A time as wrk prints it (`812.00us`, `2.50ms`, `1.20s`, `1.00m`) in milliseconds. */
function wrkMs(text) {
  const m = /^([\d.]+)(us|ms|s|m|h)$/.exec(text);
  if (!m) return NaN;
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2]];
}

/** The arguments of a timed wrk run; `env` carries the body file for the script. */
export function wrkArgs({ url, connections, seconds, headers, bodyFile }) {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s'];
  if (bodyFile) args.push('-s', WRK_LUA);
  for (const h of headers) args.push('-H', h);
  args.push(url);
  return { args, env: bodyFile ? { WRK_BODY_FILE: bodyFile } : {} };
}

export function parseWrk(out) {
  const n = (re) => Number(re.exec(out)?.[1] ?? 0);
  const pct = (p) => wrkMs(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? '');
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(out);
  if (!total) return null;
  const requests = Number(total[1]);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = n(/Non-2xx or 3xx responses: (\d+)/);
  return {
    requests,
    seconds: wrkMs(`${total[2]}${total[3]}`) / 1000,
    answered2xx: requests - non2xx,
    non2xx,
    sockErrors: sock ? sock.slice(1).reduce((a, x) => a + Number(x), 0) : 0,
    errorText: sock ? `connect ${sock[1]}, read ${sock[2]}, write ${sock[3]}, timeout ${sock[4]}` : '',
    p50: pct(50),
    p90: pct(90),
    p99: pct(99),
  };
}

/** The arguments of a timed h2load run at `rate` requests per second over all its connections. */
export function h2loadArgs({ url, connections, seconds, headers, bodyFile, rate, logFile }) {
  const args = ['--h1', '-t1', `-c${connections}`, `-D${seconds}`];
  if (rate) args.push(`--rps=${+(rate / connections).toFixed(3)}`);
  if (bodyFile) args.push('-d', bodyFile);
  if (logFile) args.push(`--log-file=${logFile}`);
  for (const h of headers) args.push('-H', h);
  args.push(url);
  return { args, env: {} };
}

export function percentile(sorted, q) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export function parseH2load(out, logFile) {
  const fin = /finished in ([\d.]+)(ms|s)/.exec(out);
  const req =
    /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(
      out,
    );
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  if (!fin || !req || !codes) return null;
  // The log's third column: microseconds from sending the request to the end of its answer.
  const times = logFile
    ? fs
        .readFileSync(logFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => Number(l.split('\t')[2]) / 1000)
        .sort((a, b) => a - b)
    : [];
  const [answered2xx, c3, c4, c5] = codes.slice(1).map(Number);
  return {
    requests: Number(req[3]),
    seconds: Number(fin[1]) / (fin[2] === 'ms' ? 1000 : 1),
    answered2xx,
    non2xx: c3 + c4 + c5,
    sockErrors: Number(req[6]) + Number(req[7]),
    errorText: `failed ${req[5]}, errored ${req[6]}, timeout ${req[7]}`,
    p50: percentile(times, 0.5),
    p90: percentile(times, 0.9),
    p99: percentile(times, 0.99),
  };
}

/** Runs a load generator to its end; its stdout. */
export async function runTool(tool, { args, env }, track, waitExit, seconds) {
  const child = track(spawn(tool, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const { code, signal } = await waitExit(child, (seconds + 60) * 1000);
  if (code !== 0)
    throw new Error(`${tool} failed (${code ?? signal}): ${(err || out).trim().split('\n').slice(-3).join(' / ')}`);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The check pass: every answer read and judged as a client would.

/** Server-sent events as [{event, data}] (data parsed when it is JSON; `[DONE]` kept as the string). */
function sseEvents(text) {
  const out = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event = null;
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    }
    if (!data.length) continue;
    const raw = data.join('\n');
    let parsed = raw;
    try {
      parsed = JSON.parse(raw);
    } catch {}
    out.push({ event, data: parsed });
  }
  return out;
}

const pos = (n) => Number.isInteger(n) && n > 0;

/** What is wrong with an answer of each wire, or null; `model` is the model the client asked for. */
const JUDGE = {
  models: (b, model) => (b.object === 'list' && b.data?.some((m) => m.id === model) ? null : `no ${model} in the list`),
  chat: (b, model) =>
    b.object !== 'chat.completion' || b.model !== model
      ? `object ${b.object}, model ${b.model}`
      : b.choices?.[0]?.message?.content !== ANSWER
        ? 'another answer'
        : pos(b.usage?.prompt_tokens) && pos(b.usage?.completion_tokens)
          ? null
          : `usage ${JSON.stringify(b.usage)}`,
  chatStream: (evs, model) => {
    const chunks = evs.filter((e) => typeof e.data === 'object');
    const text = chunks.map((e) => e.data.choices?.[0]?.delta?.content ?? '').join('');
    const usage = chunks.find((e) => e.data.usage)?.data.usage;
    if (evs.at(-1)?.data !== '[DONE]') return 'no data: [DONE] at the end';
    if (chunks.some((e) => e.data.model !== model)) return `a chunk of another model than ${model}`;
    if (text !== ANSWER) return 'another answer';
    return pos(usage?.prompt_tokens) && pos(usage?.completion_tokens) ? null : 'no usage chunk';
  },
  messages: (b, model) =>
    b.type !== 'message' || b.model !== model
      ? `type ${b.type}, model ${b.model}`
      : b.content?.[0]?.text !== ANSWER
        ? 'another answer'
        : pos(b.usage?.input_tokens) && pos(b.usage?.output_tokens)
          ? null
          : `usage ${JSON.stringify(b.usage)}`,
  messagesStream: (evs, model) => {
    const start = evs.find((e) => e.event === 'message_start')?.data;
    const text = evs.map((e) => (e.data?.delta?.type === 'text_delta' ? e.data.delta.text : '')).join('');
    const delta = evs.find((e) => e.event === 'message_delta')?.data;
    if (evs.at(-1)?.event !== 'message_stop') return 'no message_stop at the end';
    if (start?.message?.model !== model) return `message_start of model ${start?.message?.model}`;
    if (text !== ANSWER) return 'another answer';
    return pos(start.message.usage?.input_tokens) && pos(delta?.usage?.output_tokens) ? null : 'no usage';
  },
  responses: (b, model) => {
    const text = b.output?.find((o) => o.type === 'message')?.content?.[0]?.text;
    if (b.object !== 'response' || b.status !== 'completed' || b.model !== model)
      return `object ${b.object}, status ${b.status}, model ${b.model}`;
    if (text !== ANSWER) return 'another answer';
    return pos(b.usage?.input_tokens) && pos(b.usage?.output_tokens) ? null : `usage ${JSON.stringify(b.usage)}`;
  },
  responsesStream: (evs, model) => {
    const done = evs.at(-1)?.data;
    const text = evs.map((e) => (e.event === 'response.output_text.delta' ? e.data.delta : '')).join('');
    if (done?.type !== 'response.completed') return 'no response.completed at the end';
    if (done.response?.model !== model) return `response of model ${done.response?.model}`;
    if (text !== ANSWER) return 'another answer';
    return pos(done.response.usage?.input_tokens) && pos(done.response.usage?.output_tokens) ? null : 'no usage';
  },
};

/**
 * `count` requests, `connections` at a time, every answer judged by JUDGE[judge]: status 200, its shape, the model
 * asked for, the text and the usage. Returns {requests, ok, answered2xx, failures: [first few reasons]}.
 */
export async function runCheck({ url, method, headers, body, judge, model, count, connections }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const r = { requests: 0, ok: 0, answered2xx: 0, failures: [] };
  const fail = (why) => void (r.failures.length < 3 && r.failures.push(why));
  let sent = 0;
  const one = () =>
    new Promise((resolve) => {
      const req = http.request(url, { method, agent, headers: headerObject(headers, body) }, (res) => {
        const parts = [];
        res.on('data', (c) => parts.push(c));
        res.on('error', (e) => (fail(e.message), resolve()));
        res.on('end', () => {
          r.requests++;
          const text = Buffer.concat(parts).toString('utf8');
          if (res.statusCode >= 200 && res.statusCode < 300) r.answered2xx++;
          if (res.statusCode !== 200) fail(`status ${res.statusCode}: ${text.slice(0, 300)}`);
          else {
            const why = judgeText(judge, text, model);
            if (why) fail(`${why}: ${text.slice(0, 200)}`);
            else r.ok++;
          }
          resolve();
        });
      });
      req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
      req.on('error', (e) => (fail(e.message), resolve()));
      req.end(body ?? undefined);
    });
  const worker = async () => {
    while (sent < count) {
      sent++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  agent.destroy();
  return r;
}

function judgeText(judge, text, model) {
  try {
    return JUDGE[judge](judge.endsWith('Stream') ? sseEvents(text) : JSON.parse(text), model);
  } catch (e) {
    return `unreadable answer (${e.message})`;
  }
}

/** "Name: value" header lines as node:http headers, with the body's length. */
function headerObject(lines, body) {
  const h = {};
  for (const l of lines) h[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
  if (body) h['content-length'] = Buffer.byteLength(body);
  return h;
}

/**
 * Streams `connections` at a time on kept-alive connections, until `count` were sent (or, for a warm-up, until
 * `seconds` passed). Records the time from sending a request to the first byte of its answer's body, and whether the
 * stream ended with `data: [DONE]`.
 */
export async function runStream({ url, headers, body, count = Infinity, seconds = Infinity, connections }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const r = { requests: 0, answered2xx: 0, non2xx: 0, bad: 0, sockErrors: 0, ttfb: [] };
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
      const req = http.request(url, { method: 'POST', agent, headers: headerObject(headers, body) }, (res) => {
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
            if (res.statusCode < 200 || res.statusCode > 299) return void r.non2xx++;
            r.answered2xx++;
            if (!tail.trimEnd().endsWith('data: [DONE]')) r.bad++;
            else r.ttfb.push(first);
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
