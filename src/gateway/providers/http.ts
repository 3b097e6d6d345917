/**
 * The HTTP client the upstream providers share: one pooled, kept-alive undici Agent per provider with the configured
 * time limits, JSON POSTs, streams, and every failure turned into an UpstreamError. URLs, headers and the shape of
 * the upstream's error bodies come from the provider's descriptor (see provider.ts).
 */
import { isUtf8 } from 'node:buffer';
import type * as Undici from 'undici';
import type { ProviderConfig } from '../../config';
import type { Abortable } from '../cancel';
import { keepSource } from '../splice';
import { parseSse, type SseEvent } from '../sse';
import { UpstreamError } from '../types';
import type { ErrorReader, OutgoingRequest } from './types';

/*
 * undici's Agent and its errors, from their own modules: the package's entry loads all of undici (fetch, WebSocket,
 * EventSource, caches, mocks: 110 modules, 4.3 MB of heap, 60 ms of start-up) where the Agent needs 23 (1.2 MB).
 * The paths are those of the pinned version (package.json); the types are the package's.
 */
const Agent = require('undici/lib/dispatcher/agent') as typeof Undici.Agent;
type Agent = Undici.Agent;
const undiciErrors = require('undici/lib/core/errors') as typeof Undici.errors;

/** OpenAI's and Anthropic's error bodies: `{"error":{"message":"..."}}`. */
export const errorMessage: ErrorReader = (body) => ({
  message: str((body as { error?: { message?: unknown } }).error?.message),
});

export class UpstreamHttp {
  private readonly agent: Agent;

  constructor(
    private readonly config: ProviderConfig,
    private readonly readError: ErrorReader = errorMessage,
  ) {
    const t = config.timeouts;
    this.agent = new Agent({
      connections: config.max_connections,
      connect: { timeout: t.connect_ms },
      headersTimeout: t.first_byte_ms,
      bodyTimeout: t.idle_ms,
      keepAliveTimeout: 30_000,
    });
  }

  /**
   * A JSON answer, through the dispatcher with a handler of our own (JsonExchange): no response stream and no
   * header parsing on the paid path, where undici's request() cost more than everything else it does.
   */
  async json(req: OutgoingRequest, signal: Abortable, keep = false): Promise<unknown> {
    let answer: { status: number; body: Buffer; headers: Record<string, string> };
    try {
      answer = await new Promise((resolve, reject) => {
        const { origin, path } = target(req.url);
        this.agent.dispatch(
          { origin, path, method: req.method, headers: req.headers, body: req.body },
          new JsonExchange(signal, resolve, reject),
        );
      });
    } catch (e) {
      throw failure(e, signal);
    }
    if (answer.status >= 400) throw this.statusError(answer.status, answer.body.toString('utf8'), answer.headers);
    let json: unknown;
    try {
      json = JSON.parse(answer.body.toString('utf8'));
    } catch (e) {
      throw failure(e, signal);
    }
    // `keep`: the answer goes back as the upstream wrote it, with only what the gateway changes spliced in (splice.ts)
    if (keep && isUtf8(answer.body)) keepSource(json, answer.body, 'answer');
    return json;
  }

  /** The answer's events (server-sent events unless `framing` says otherwise), as `read` turns them into values. */
  stream<T>(
    req: OutgoingRequest,
    signal: Abortable,
    read: (events: AsyncIterable<SseEvent>) => AsyncIterable<T>,
    framing: (body: AsyncIterable<Buffer>) => AsyncIterable<SseEvent> = parseSse,
  ): AsyncGenerator<T> {
    return this.body(req, signal, (body) => read(framing(body)));
  }

  /** The answer's bytes as they arrive (a binary answer: audio), never gathered whole. */
  bytes(req: OutgoingRequest, signal: Abortable): AsyncGenerator<Buffer> {
    return this.body(req, signal, (body) => body);
  }

  /** A successful answer's body, as `read` turns it into values; the connection is closed when reading stops. */
  private async *body<T>(
    req: OutgoingRequest,
    signal: Abortable,
    read: (body: AsyncIterable<Buffer>) => AsyncIterable<T>,
  ): AsyncGenerator<T> {
    const res = await this.open(req, signal);
    try {
      yield* read(res);
    } catch (e) {
      throw failure(e, signal);
    } finally {
      res.close(); // a consumer that stopped early closes the upstream connection
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /**
   * Sends the request and returns the body of a successful answer, read through a dispatch handler of our own
   * (StreamExchange) rather than undici's request(): its Readable and async iterator cost more per event of a stream
   * than the gateway's own reading of it. An error status becomes an UpstreamError. `signal` also carries the
   * route's total time limit (the router aborts it with a timeout).
   */
  private async open(req: OutgoingRequest, signal: Abortable): Promise<StreamExchange> {
    const ex = new StreamExchange(signal);
    try {
      const { origin, path } = target(req.url);
      this.agent.dispatch({ origin, path, method: req.method, headers: req.headers, body: req.body }, ex);
      await ex.started;
    } catch (e) {
      throw failure(e, signal);
    }
    if (ex.status < 400) return ex;
    let text = '';
    try {
      for await (const chunk of ex) text += chunk.toString('utf8');
    } catch {
      ex.close();
    }
    throw this.statusError(ex.status, text, ex.headers);
  }

  /** An error status, with what the provider's error body says (never the body itself: it may echo secrets). */
  private statusError(statusCode: number, text: string, headers: Record<string, string>): UpstreamError {
    let info: ReturnType<ErrorReader> = {};
    try {
      info = this.readError(JSON.parse(text), statusCode, headers);
    } catch {
      // not JSON: the status says enough
    }
    const description = `the upstream answered HTTP ${statusCode}${info.code ? ` ${info.code}` : ''}`;
    return new UpstreamError('status', description, info.status ?? statusCode, info.message);
  }
}

/** An upstream URL as the dispatcher takes it (origin and path), parsed once per distinct URL. */
const targets = new Map<string, { origin: string; path: string }>();
function target(url: string): { origin: string; path: string } {
  let t = targets.get(url);
  if (!t) {
    const u = new URL(url);
    t = { origin: u.origin, path: `${u.pathname}${u.search}` };
    if (targets.size < 10_000) targets.set(url, t); // a provider's URLs are few; Azure's carry the deployment
  }
  return t;
}

/** Headers as one string each (a repeated header's values joined), for error readers. */
function single(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h))
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** undici's dispatch handler for one JSON exchange: the status, headers of an error and the body's bytes, or the failure. */
class JsonExchange {
  private status = 0;
  private headers: Record<string, string> = {};
  private readonly chunks: Buffer[] = [];
  private abort: ((reason: Error) => void) | null = null;
  private readonly onAbort = () => this.abort?.(this.signal.reason as Error);

  constructor(
    private readonly signal: Abortable,
    private readonly resolve: (answer: { status: number; body: Buffer; headers: Record<string, string> }) => void,
    private readonly reject: (e: unknown) => void,
  ) {
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  onConnect(abort: (reason: Error) => void): void {
    if (this.signal.aborted) abort(this.signal.reason as Error);
    else this.abort = abort;
  }

  onHeaders(statusCode: number, raw: Buffer[] | string[] | null): boolean {
    if (statusCode >= 200) this.status = statusCode; // 1xx are interim
    // Only an error's headers are read (its type, for some providers): a success costs nothing more.
    if (statusCode >= 400 && raw)
      for (let i = 0; i + 1 < raw.length; i += 2) this.headers[raw[i].toString().toLowerCase()] = raw[i + 1].toString();
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    this.signal.removeEventListener('abort', this.onAbort);
    const body = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    this.resolve({ status: this.status, body, headers: this.headers });
  }

  onError(e: Error): void {
    this.signal.removeEventListener('abort', this.onAbort);
    this.reject(e);
  }
}

/** Bytes of a stream's body held unread before the upstream is paused (undici stops reading its socket). */
const HIGH_WATER = 64 * 1024;

/**
 * undici's dispatch handler for a streamed answer, itself the async iterator of the body's chunks: `started` settles
 * with the status (a failure before it rejects it); chunks wait in a queue, the upstream paused while more than
 * HIGH_WATER bytes are unread; `close` (or the signal) aborts the exchange.
 */
class StreamExchange implements AsyncIterableIterator<Buffer> {
  status = 0;
  headers: Record<string, string> = {};
  readonly started: Promise<void>;
  private start!: { resolve: () => void; reject: (e: unknown) => void };
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private ended = false;
  private error: unknown = null;
  private waiting: { resolve: (r: IteratorResult<Buffer>) => void; reject: (e: unknown) => void } | null = null;
  private abort: ((reason: Error) => void) | null = null;
  private resume: (() => void) | null = null;
  private paused = false;
  private readonly onAbort = () => this.abort?.(this.signal.reason as Error);

  constructor(private readonly signal: Abortable) {
    this.started = new Promise((resolve, reject) => (this.start = { resolve, reject }));
    this.started.catch(() => undefined); // a failure before the start is also thrown by the iterator, if it is read
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  onConnect(abort: (reason: Error) => void): void {
    if (this.signal.aborted) abort(this.signal.reason as Error);
    else this.abort = abort;
  }

  onHeaders(statusCode: number, raw: Buffer[] | string[] | null, resume: () => void): boolean {
    if (statusCode < 200) return true; // 1xx are interim
    this.status = statusCode;
    this.resume = resume;
    if (statusCode >= 400 && raw)
      for (let i = 0; i + 1 < raw.length; i += 2) this.headers[raw[i].toString().toLowerCase()] = raw[i + 1].toString();
    this.start.resolve();
    return true;
  }

  onData(chunk: Buffer): boolean {
    const waiting = this.waiting;
    if (waiting) {
      this.waiting = null;
      waiting.resolve({ value: chunk, done: false });
      return true;
    }
    this.queue.push(chunk);
    this.queued += chunk.length;
    return !(this.paused = this.queued > HIGH_WATER);
  }

  onComplete(): void {
    this.finish(null);
  }

  onError(e: Error): void {
    this.finish(e);
  }

  next(): Promise<IteratorResult<Buffer>> {
    const chunk = this.queue.shift();
    if (chunk) {
      this.queued -= chunk.length;
      if (this.paused && this.queued <= HIGH_WATER / 2) {
        this.paused = false;
        this.resume?.();
      }
      return Promise.resolve({ value: chunk, done: false });
    }
    if (this.error) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  return(): Promise<IteratorResult<Buffer>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Stops the exchange (the connection is closed if the answer had not ended). */
  close(): void {
    if (!this.ended) this.abort?.(new Error('closed by the gateway'));
    this.finish(null);
  }

  private finish(e: Error | null): void {
    if (this.ended) return;
    this.ended = true;
    this.signal.removeEventListener('abort', this.onAbort);
    if (e) this.error = e;
    if (!this.status) this.start.reject(e ?? new Error('the answer ended before its status'));
    const waiting = this.waiting;
    this.waiting = null;
    if (waiting) e ? waiting.reject(e) : waiting.resolve({ value: undefined, done: true });
  }
}

/** The JSON of an event's data. */
export function eventJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    throw new UpstreamError('protocol', 'the upstream sent an event that is not JSON');
  }
}

/** The JSON of an event's data, which must be an object. */
export function eventObject(data: string): object {
  const parsed = eventJson(data);
  if (!parsed || typeof parsed !== 'object')
    throw new UpstreamError('protocol', 'the upstream sent an event that is not an object');
  return parsed;
}

/** The JSON object of each event, until the stream closes. */
export async function* eventObjects(events: AsyncIterable<SseEvent>): AsyncGenerator<object> {
  for await (const ev of events) yield eventObject(ev.data);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}

function failure(e: unknown, signal: Abortable): UpstreamError {
  if (e instanceof UpstreamError) return e;
  // The router aborts with the reason: a timeout of the route, or the client gone.
  if (signal.aborted)
    return signal.reason instanceof UpstreamError
      ? signal.reason
      : new UpstreamError('aborted', 'the request was cancelled');
  if (
    e instanceof undiciErrors.ConnectTimeoutError ||
    e instanceof undiciErrors.HeadersTimeoutError ||
    e instanceof undiciErrors.BodyTimeoutError
  ) {
    return new UpstreamError('timeout', `the upstream timed out (${(e as Error).message})`);
  }
  if (e instanceof SyntaxError) return new UpstreamError('protocol', 'the upstream sent a body that is not JSON');
  const code = (e as { code?: string }).code ?? (e as { cause?: { code?: string } }).cause?.code ?? 'error';
  return new UpstreamError('connect', `cannot reach the upstream (${code})`);
}
