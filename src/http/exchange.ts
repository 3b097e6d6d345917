/**
 * One request and its answer, on Node's own request and response objects (the API of the contract is served
 * without Hapi's request lifecycle: see api.ts): the request id, the caller, how it ended; writing the answer —
 * JSON in one write of head and body, server-sent events frame by frame with back-pressure, an error in the
 * OpenAI shape (Anthropic's on its endpoints) —; and, once the answer is over, the metrics and the one log line.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { anthropicError, type ApiError } from '../errors';
import { serialized } from '../gateway/splice';
import type { Meter } from '../gateway/types';
import type { Reply } from '../handlers/types';
import type { App } from '../services/app';
import { refusalReason } from '../billing/refusals';
import { usageAttributes, type RequestTrace } from '../tracing';
import { isApiConsolePath, logAnswer, newRequestId, toApiError, type AnswerLog } from './errors';
import type { Caller } from './security';

export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  /** Date.now() when the request arrived. */
  received: number;
  /** The path without its query and trailing slash. */
  path: string;
  /** The contract's operationId (metrics, logs); `other` when no operation matched. */
  operationId: string;
  /** Errors in Anthropic's shape. */
  anthropic: boolean;
  caller: Caller;
  /** The model a request asked for, for the log line. */
  model?: string;
  /** What the request used at an upstream, for the log line (for a stream, read once it has ended). */
  meter?: () => Meter | null;
  /** The error the request ended with (code and the message the client got, and what else the log says). */
  error?: { code: string | null; message: string; logged?: Record<string, string> };
  /**
   * While the API serves the request (api.ts): a client that leaves first closes the answer, and the log line waits
   * for the handler's end, to say how it ended (499, a stream's usage) rather than the 200 a response starts with.
   */
  serving?: boolean;
  closed?: boolean;
  /** The request's trace, only while tracing is on (tracing.ts). */
  trace: RequestTrace | undefined;
}

/** Starts an exchange; its metrics and log line are written when the answer is over, however it ends. */
export function openExchange(app: App, req: IncomingMessage, res: ServerResponse, path: string): Exchange {
  const ex: Exchange = {
    req,
    res,
    requestId: newRequestId(),
    received: Date.now(),
    path,
    operationId: 'other',
    anthropic: false,
    caller: {},
    trace: undefined,
  };
  res.once('close', () => {
    ex.closed = true;
    if (!ex.serving) logExchange(app, ex);
  });
  if (!res.socket) closeWithConnection(req, res);
  return ex;
}

/** The API's handler of the request is over: if its client left before, its log line waited for this. */
export function served(app: App, ex: Exchange): void {
  ex.serving = false;
  if (ex.closed) logExchange(app, ex);
}

/**
 * A pipelined request's answer waits for those before it on its connection and has no socket yet; if the client
 * leaves meanwhile, Node never closes it. Its connection's close stands in, so that its upstream call is cancelled,
 * its stream stops waiting for a drain that will not come, and the API's count of requests in flight goes down.
 */
function closeWithConnection(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  const left = () => {
    if (res.socket || res.writableFinished) return; // answered, or given the socket: Node closes it itself
    res.destroy();
    res.emit('close');
  };
  socket.once('close', left);
  res.once('close', () => socket.removeListener('close', left));
}

function logExchange(app: App, ex: Exchange): void {
  const meter = ex.meter?.();
  const c = ex.caller;
  // the fields that may be absent are set, not spread in: see fieldsOf (gateway/providers/shared.ts)
  const a: AnswerLog = {
    operation: ex.operationId,
    reqId: ex.requestId,
    method: ex.req.method ?? 'GET',
    path: ex.path,
    status: ex.res.statusCode,
    received: ex.received,
    key: c.keyPrefix,
    account: c.accountId,
  };
  if (c.operator) a.operator = c.operator.operatorId; // who did what in /admin/api, beside the audit log
  if (ex.model) a.model = ex.model;
  if (meter) {
    a.provider = meter.provider;
    a.usage = meter.usage;
    a.counted = meter.counted;
  }
  if (ex.error) Object.assign(a, { error: ex.error.code, cause: ex.error.message, ...ex.error.logged });
  logAnswer(app, a);
  if (ex.trace) endTrace(ex.trace, ex, meter);
}

/** The request's span ends with the answer: its status, who called (ids only), what it used and where. */
function endTrace(t: RequestTrace, ex: Exchange, meter: Meter | null | undefined): void {
  const c = ex.caller;
  const status = ex.res.statusCode;
  t.end(
    status,
    {
      ...(c.accountId !== undefined && { 'switchyard.account.id': c.accountId }),
      ...(c.keyId !== undefined && { 'switchyard.key.id': c.keyId }),
      ...(meter && { 'switchyard.provider': meter.provider, 'switchyard.usage.counted': meter.counted }),
      ...(meter && usageAttributes(meter.usage)),
    },
    ex.error ? (ex.error.code ?? String(status)) : status >= 400 ? String(status) : undefined,
  );
}

/** The request id goes out on every answer; Anthropic's SDKs read it from `request-id`. */
function answerHead(ex: Exchange, head: OutgoingHttpHeaders): OutgoingHttpHeaders {
  head['x-request-id'] = ex.requestId;
  if (ex.anthropic) head['request-id'] = ex.requestId;
  return head;
}

/** Writes a JSON answer (or none, for a null body) in one write of head and body. */
export function sendJson(ex: Exchange, status: number, body: unknown, headers: OutgoingHttpHeaders = {}): void {
  const res = ex.res;
  if (res.headersSent) return;
  if (res.destroyed) {
    res.statusCode = 499; // the client left before its answer: the log line and the metrics say so
    return;
  }
  const head = answerHead(ex, { 'cache-control': 'no-cache', ...headers });
  if (isApiConsolePath(ex.path)) head['cache-control'] = 'no-store';
  if (body === null || body === undefined) {
    res.writeHead(status === 200 ? 204 : status, head);
    res.end();
    return;
  }
  const text = serialized(body, 'answer'); // an upstream's answer passed on: its own bytes, spliced (gateway/splice.ts)
  head['content-type'] = 'application/json; charset=utf-8';
  head['content-length'] = Buffer.byteLength(text);
  res.writeHead(status, head);
  res.end(text);
}

/** Text of a media type (a transcript as SubRip), in one write. */
function sendText(ex: Exchange, status: number, text: string, type: string, headers: OutgoingHttpHeaders = {}): void {
  const res = ex.res;
  if (res.headersSent) return;
  if (res.destroyed) {
    res.statusCode = 499;
    return;
  }
  const head = answerHead(ex, { 'cache-control': 'no-cache', ...headers });
  head['content-type'] = type;
  head['content-length'] = Buffer.byteLength(text);
  res.writeHead(status, head);
  res.end(text);
}

/** Writes whatever a request failed with: ours as it is, anything else as a 503 (database away) or a 500. */
export function sendError(app: App, ex: Exchange, e: unknown): void {
  const err: ApiError = toApiError(e, app, ex.requestId, ex.path);
  ex.error = { code: err.code, message: err.message, logged: err.logged };
  countRefusal(app, ex, err);
  const shaped = ex.anthropic ? anthropicError(err) : { status: err.status, body: err.toBody() };
  if (ex.res.destroyed) {
    ex.res.statusCode = err.status; // nobody to answer (the client left): the log line still says how it ended
    return;
  }
  if (ex.res.headersSent) {
    ex.res.destroy(); // a failure after the head went out: the client sees a broken answer, never a second one
    return;
  }
  sendJson(ex, shaped.status, shaped.body, err.headers);
}

/** A known key's call refused (money, rate, disabled, expired): counted in memory for its owner's usage page. */
function countRefusal(app: App, ex: Exchange, err: ApiError): void {
  const { keyId, accountId } = ex.caller;
  if (keyId === undefined || accountId === undefined) return;
  const reason = refusalReason(err);
  if (reason) app.refusals.record({ accountId, keyId, status: err.status, reason, endpoint: ex.operationId });
}

/** Writes a handler's Reply: JSON, or server-sent events or bytes (audio) as they come. */
export function sendReply(ex: Exchange, out: Reply): Promise<void> | void {
  ex.meter = out.meter;
  if ('body' in out && out.contentType)
    return sendText(ex, out.status ?? 200, String(out.body), out.contentType, out.headers);
  if ('body' in out) return sendJson(ex, out.status ?? 200, out.body, out.headers);
  const [type, frames] = 'sse' in out ? ['text/event-stream; charset=utf-8', out.sse] : [out.contentType, out.binary];
  // No content-length: the answer is chunked, each frame sent as it comes; proxies are asked not to buffer it.
  ex.res.writeHead(
    200,
    answerHead(ex, { ...out.headers, 'content-type': type, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' }),
  );
  return pump(frames, ex.res);
}

/** Whether the client's connection closed before its answer was complete. */
export const gone = (res: ServerResponse) => !res.writableFinished && (res.destroyed || !!res.socket?.destroyed);

/** A signal that fires when the client disconnects before the response is complete. */
export function clientGone(res: ServerResponse): AbortSignal {
  const ctrl = new AbortController();
  const left = () => {
    if (!res.writableFinished) ctrl.abort();
  };
  res.once('close', left);
  if (gone(res)) left(); // it closed before we listened: the event will not come again
  return ctrl.signal;
}

/**
 * Writes the frames as they come, waiting for the client when it reads slowly (and so, not reading on, for the
 * upstream); when the client is gone (even before the stream started) the frame source is closed, so its clean-up —
 * cancelling the upstream call, settling what was used — always runs. Node sends the head with the first frame, in
 * one packet. A source that fails (a binary answer cannot frame its error) breaks the connection: the client sees an
 * incomplete answer, never one that merely ends early.
 */
async function pump(frames: AsyncIterable<string | Uint8Array>, res: ServerResponse): Promise<void> {
  const it = frames[Symbol.asyncIterator]();
  let left = gone(res);
  let wake = () => {};
  const onClose = () => {
    if (!res.writableFinished) left = true;
    wake();
  };
  res.once('close', onClose);
  let broken = false;
  try {
    for (let r = await it.next(); !r.done && !left; r = await it.next()) {
      if (res.write(r.value)) continue;
      await new Promise<void>((resolve) => {
        wake = resolve;
        res.once('drain', resolve);
        if (left) resolve();
      });
      res.removeListener('drain', wake);
    }
  } catch {
    broken = true; // an SSE stream's own error event was already framed: this is a failure it could not frame
  } finally {
    res.removeListener('close', onClose);
    await it.return?.()?.catch(() => undefined);
    if (broken) res.destroy();
    else res.end();
  }
}
