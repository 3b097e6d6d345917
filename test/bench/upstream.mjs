/**
 * A fake upstream for the benchmark, speaking both wires a coding agent needs: plain node:http on loopback, no test
 * framework needed. Every answer echoes the request's `model` and is the same 20-piece text, so the harness checks
 * the same things through the bare proxy and through Switchyard.
 *
 *   POST /v1/chat/completions   (OpenAI) after THINK ms (default 0) answers. Non-streaming: one JSON body at once.
 *                               Streaming: a role chunk at once, then 20 content chunks CHUNK ms apart (default 5), a
 *                               finish chunk, the usage chunk when stream_options.include_usage is set, `data: [DONE]`.
 *                               Usage is always reported (prompt 42, completion 20 tokens).
 *   POST /v1/messages           (Anthropic) a `message` with one text block; streamed: message_start, content_block_start
 *                               and ping at once, then 20 text_delta events CHUNK ms apart, content_block_stop,
 *                               message_delta (stop reason, output tokens) and message_stop.
 *   POST /v1/responses          (OpenAI Responses) a `response` with one message item; streamed: response.created,
 *                               .in_progress, .output_item.added and .content_part.added at once, then 20
 *                               response.output_text.delta events CHUNK ms apart, the .done events and
 *                               response.completed (with usage), each numbered by sequence_number.
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
  const wire = req.method === 'POST' ? WIRES[path] : undefined;
  if (!wire) {
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
  const go = () => (body.stream ? wire.stream(res, model, body, chunkMs) : json(res, 200, wire.answer(model)));
  if (thinkMs > 0) setTimeout(go, thinkMs);
  else go();
}

/**
 * Writes `head` frames at once, then one frame per piece CHUNK ms apart, then `tail` frames, and ends the answer.
 * Stops writing when the client went away.
 */
function streamPieces(res, { head, piece, tail }, chunkMs) {
  if (res.destroyed) return;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.write(head.join(''));
  let i = 0;
  const next = () => {
    if (res.destroyed) return;
    res.write(piece(PIECES[i++]));
    if (i < PIECES.length) return void setTimeout(next, chunkMs);
    res.end(tail().join(''));
  };
  setTimeout(next, chunkMs);
}

function chatAnswer(model) {
  return {
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
  };
}

function chatStream(res, model, body, chunkMs) {
  const includeUsage = body.stream_options?.include_usage === true;
  const base = {
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: CREATED,
    model,
    system_fingerprint: 'fp_bench',
  };
  const u = includeUsage ? { usage: null } : {};
  const frame = (o) => `data: ${JSON.stringify(o)}\n\n`;
  const choice = (delta, finish_reason = null) => [{ index: 0, delta, logprobs: null, finish_reason }];
  streamPieces(
    res,
    {
      head: [frame({ ...base, choices: choice({ role: 'assistant', content: '' }), ...u })],
      piece: (content) => frame({ ...base, choices: choice({ content }), ...u }),
      tail: () => [
        frame({ ...base, choices: choice({}, 'stop'), ...u }),
        ...(includeUsage ? [frame({ ...base, choices: [], usage: USAGE })] : []),
        'data: [DONE]\n\n',
      ],
    },
    chunkMs,
  );
}

const ANTHROPIC_USAGE = { input_tokens: USAGE.prompt_tokens, output_tokens: USAGE.completion_tokens };

function messagesAnswer(model) {
  return {
    id: 'msg_bench',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text: ANSWER }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: ANTHROPIC_USAGE,
  };
}

function messagesStream(res, model, _body, chunkMs) {
  const ev = (o) => `event: ${o.type}\ndata: ${JSON.stringify(o)}\n\n`;
  const start = {
    ...messagesAnswer(model),
    content: [],
    stop_reason: null,
    usage: { ...ANTHROPIC_USAGE, output_tokens: 1 },
  };
  streamPieces(
    res,
    {
      head: [
        ev({ type: 'message_start', message: start }),
        ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
        ev({ type: 'ping' }),
      ],
      piece: (text) => ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
      tail: () => [
        ev({ type: 'content_block_stop', index: 0 }),
        ev({
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: USAGE.completion_tokens },
        }),
        ev({ type: 'message_stop' }),
      ],
    },
    chunkMs,
  );
}

const RESPONSES_USAGE = {
  input_tokens: USAGE.prompt_tokens,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: USAGE.completion_tokens,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: USAGE.total_tokens,
};
const OUTPUT_TEXT = { type: 'output_text', text: ANSWER, annotations: [] };
const OUTPUT_ITEM = {
  type: 'message',
  id: 'msg_bench',
  status: 'completed',
  role: 'assistant',
  content: [OUTPUT_TEXT],
};

function responsesAnswer(model) {
  return {
    id: 'resp_bench',
    object: 'response',
    created_at: CREATED,
    status: 'completed',
    model,
    output: [OUTPUT_ITEM],
    usage: RESPONSES_USAGE,
    error: null,
    incomplete_details: null,
    store: false,
  };
}

function responsesStream(res, model, _body, chunkMs) {
  let seq = 0;
  const ev = (o) => `event: ${o.type}\ndata: ${JSON.stringify({ ...o, sequence_number: seq++ })}\n\n`;
  const done = responsesAnswer(model);
  const shell = { ...done, status: 'in_progress', output: [], usage: null };
  const at = { item_id: OUTPUT_ITEM.id, output_index: 0, content_index: 0 };
  streamPieces(
    res,
    {
      head: [
        ev({ type: 'response.created', response: shell }),
        ev({ type: 'response.in_progress', response: shell }),
        ev({
          type: 'response.output_item.added',
          output_index: 0,
          item: { ...OUTPUT_ITEM, status: 'in_progress', content: [] },
        }),
        ev({ type: 'response.content_part.added', ...at, part: { ...OUTPUT_TEXT, text: '' } }),
      ],
      piece: (delta) => ev({ type: 'response.output_text.delta', ...at, delta, logprobs: [] }),
      tail: () => [
        ev({ type: 'response.output_text.done', ...at, text: ANSWER, logprobs: [] }),
        ev({ type: 'response.content_part.done', ...at, part: OUTPUT_TEXT }),
        ev({ type: 'response.output_item.done', output_index: 0, item: OUTPUT_ITEM }),
        ev({ type: 'response.completed', response: done }),
      ],
    },
    chunkMs,
  );
}

/** The POST paths the fake serves, by wire. */
const WIRES = {
  '/v1/chat/completions': { answer: chatAnswer, stream: chatStream },
  '/v1/messages': { answer: messagesAnswer, stream: messagesStream },
  '/v1/responses': { answer: responsesAnswer, stream: responsesStream },
};

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
