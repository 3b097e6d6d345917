/**
 * A fake OpenAI-compatible upstream for the benchmark: plain node:http on loopback, no test framework needed.
 *
 *   POST /v1/chat/completions   after THINK ms (default 0) answers. Non-streaming: one JSON body at once. Streaming:
 *                               a role chunk at once, then 20 content chunks CHUNK ms apart (default 5), a finish
 *                               chunk, the usage chunk when stream_options.include_usage is set, and `data: [DONE]`.
 *                               Usage is always reported (prompt 42, completion 20 tokens).
 *   GET  /v1/models             answers at once.
 *
 * Run as a process: `node test/bench/upstream.mjs [--think-ms 0] [--chunk-ms 5] [--port 0]`; it prints
 * {"url": "http://127.0.0.1:PORT/v1", "pid": N} on stdout once it listens, and stops on SIGTERM/SIGINT.
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const CREATED = 1_735_689_600;
/** The answer, in the 20 pieces a stream sends. */
export const PIECES = [
  'Hello',
  '!',
  ' This',
  ' is',
  ' a',
  ' fixed',
  ' benchmark',
  ' answer',
  ' from',
  ' the',
  ' fake',
  ' upstream',
  ',',
  ' twenty',
  ' pieces',
  ' long',
  ' when',
  ' it',
  ' streams',
  '.',
];
export const ANSWER = PIECES.join('');
const USAGE = { prompt_tokens: 42, completion_tokens: PIECES.length, total_tokens: 42 + PIECES.length };

export function startUpstream({ thinkMs = 0, chunkMs = 5, port = 0, host = '127.0.0.1' } = {}) {
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (raw += c));
    req.on('end', () => handle(req, res, raw, thinkMs, chunkMs));
  });
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 61_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: p } = server.address();
      resolve({ server, url: `http://${host}:${p}/v1` });
    });
  });
}

function handle(req, res, raw, thinkMs, chunkMs) {
  const path = req.url.split('?')[0];
  if (req.method === 'GET' && path === '/v1/models') {
    return json(res, 200, {
      object: 'list',
      data: [{ id: 'fake-chat', object: 'model', created: CREATED, owned_by: 'bench' }],
    });
  }
  if (req.method !== 'POST' || path !== '/v1/chat/completions') {
    return json(res, 404, {
      error: { message: 'Unknown path', type: 'invalid_request_error', param: null, code: 'unknown_url' },
    });
  }
  let body;
  try {
    body = JSON.parse(raw);
  } catch {
    return json(res, 400, {
      error: { message: 'bad JSON', type: 'invalid_request_error', param: null, code: 'invalid_json' },
    });
  }
  const model = body.model ?? 'fake-chat';
  const go = () =>
    body.stream ? stream(res, model, body.stream_options?.include_usage === true, chunkMs) : answer(res, model);
  if (thinkMs > 0) setTimeout(go, thinkMs);
  else go();
}

function answer(res, model) {
  json(res, 200, {
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: CREATED,
    model,
    system_fingerprint: 'fp_bench',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: ANSWER, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: USAGE,
  });
}

function stream(res, model, includeUsage, chunkMs) {
  if (res.destroyed) return;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const base = {
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: CREATED,
    model,
    system_fingerprint: 'fp_bench',
  };
  const u = includeUsage ? { usage: null } : {};
  const frame = (o) => `data: ${JSON.stringify(o)}\n\n`;
  res.write(
    frame({
      ...base,
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      ...u,
    }),
  );
  let i = 0;
  const next = () => {
    if (res.destroyed) return;
    res.write(
      frame({
        ...base,
        choices: [{ index: 0, delta: { content: PIECES[i++] }, logprobs: null, finish_reason: null }],
        ...u,
      }),
    );
    if (i < PIECES.length) return void setTimeout(next, chunkMs);
    let tail = frame({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], ...u });
    if (includeUsage) tail += frame({ ...base, choices: [], usage: USAGE });
    res.end(`${tail}data: [DONE]\n\n`);
  };
  setTimeout(next, chunkMs);
}

function json(res, status, body) {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
  res.end(s);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      'think-ms': { type: 'string', default: '0' },
      'chunk-ms': { type: 'string', default: '5' },
      port: { type: 'string', default: '0' },
    },
  });
  const { server, url } = await startUpstream({
    thinkMs: Number(values['think-ms']),
    chunkMs: Number(values['chunk-ms']),
    port: Number(values.port),
  });
  process.stdout.write(`${JSON.stringify({ url, pid: process.pid })}\n`);
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.once('disconnect', stop);
}
