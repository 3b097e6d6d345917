/**
 * A fake OpenAI-compatible upstream for the benchmark: plain node:http on loopback, no test framework needed.
 *
 *   POST /v1/chat/completions   waits THINK ms, then answers (non-streaming: one JSON body; streaming: a role chunk,
 *                               a few content chunks, a finish chunk, the usage chunk when stream_options.include_usage
 *                               is set, and `data: [DONE]`), always with usage
 *   GET  /v1/models             answers at once (the floor: a trivial Node HTTP answer on loopback)
 *
 * Run as a process: `node test/bench/upstream.mjs [--think-ms 20] [--port 0]`; it prints {"url": "..."} on stdout
 * once it listens, and stops on SIGTERM/SIGINT.
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const CREATED = 1_735_689_600;
const PIECES = ['Hello', '! This', ' is a', ' fixed', ' benchmark', ' answer', ' from the', ' fake upstream.'];
const USAGE = { prompt_tokens: 42, completion_tokens: 12, total_tokens: 54 };

export function startUpstream({ thinkMs = 20, port = 0, host = '127.0.0.1' } = {}) {
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (raw += c));
    req.on('end', () => handle(req, res, raw, thinkMs));
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: p } = server.address();
      resolve({ server, url: `http://${host}:${p}/v1` });
    });
  });
}

function handle(req, res, raw, thinkMs) {
  const path = req.url.split('?')[0];
  if (req.method === 'GET' && path === '/v1/models') {
    return json(res, 200, { object: 'list', data: [{ id: 'fake-chat', object: 'model', created: CREATED, owned_by: 'bench' }] });
  }
  if (req.method !== 'POST' || path !== '/v1/chat/completions') {
    return json(res, 404, { error: { message: 'Unknown path', type: 'invalid_request_error', param: null, code: 'unknown_url' } });
  }
  let body;
  try {
    body = JSON.parse(raw);
  } catch {
    return json(res, 400, { error: { message: 'bad JSON', type: 'invalid_request_error', param: null, code: 'invalid_json' } });
  }
  const model = body.model ?? 'fake-chat';
  setTimeout(() => (body.stream ? stream(res, model, body.stream_options?.include_usage === true) : answer(res, model)), thinkMs);
}

function answer(res, model) {
  json(res, 200, {
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: CREATED,
    model,
    system_fingerprint: 'fp_bench',
    choices: [{ index: 0, message: { role: 'assistant', content: PIECES.join(''), refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: USAGE,
  });
}

function stream(res, model, includeUsage) {
  if (res.destroyed) return;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: CREATED, model, system_fingerprint: 'fp_bench' };
  const u = includeUsage ? { usage: null } : {};
  const events = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], ...u },
    ...PIECES.map((p) => ({ ...base, choices: [{ index: 0, delta: { content: p }, logprobs: null, finish_reason: null }], ...u })),
    { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], ...u },
    ...(includeUsage ? [{ ...base, choices: [], usage: USAGE }] : []),
  ];
  // One write per event, each on its own turn of the event loop, as a real upstream sends them.
  let i = 0;
  const next = () => {
    if (res.destroyed) return;
    if (i < events.length) {
      res.write(`data: ${JSON.stringify(events[i++])}\n\n`);
      setImmediate(next);
    } else {
      res.end('data: [DONE]\n\n');
    }
  };
  next();
}

function json(res, status, body) {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
  res.end(s);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'think-ms': { type: 'string', default: '20' }, port: { type: 'string', default: '0' } } });
  const { server, url } = await startUpstream({ thinkMs: Number(values['think-ms']), port: Number(values.port) });
  process.stdout.write(`${JSON.stringify({ url, pid: process.pid })}\n`);
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.once('disconnect', stop);
}
