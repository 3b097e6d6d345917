/**
 * What the fake upstreams share: a real HTTP server on loopback that records every request, counts connections and
 * client aborts, and answers from `plans` (first in first out; when empty, the provider's default answer).
 * A provider's fake supplies its `Wire`: how it frames an SSE event, its headers, and any check it makes first.
 * Tests script answers with `plan`, and read what it received from `requests`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import busboy from 'busboy';

export interface Received {
  method: string;
  /** Path and query, e.g. `/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /**
   * The JSON body parsed (the raw text if it is not JSON, null if empty); a multipart body as its fields, each file
   * as a FormFile (a field sent as `name[]` as a list).
   */
  body: any;
  /** The body's text as it came (what a signature covers). */
  raw: string;
}

/** A file of a multipart body, as the fake received it. */
export interface FormFile {
  filename: string;
  type: string;
  bytes: Buffer;
}

/** A multipart/form-data body as fields (text, or FormFile), parsed by busboy as any server would. */
function parseForm(raw: Buffer, headers: http.IncomingHttpHeaders): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const out: Record<string, unknown> = {};
    const put = (name: string, v: unknown) => {
      if (!name.endsWith('[]')) return void (out[name] = v);
      const key = name.slice(0, -2);
      out[key] = [...((out[key] as unknown[]) ?? []), v];
    };
    const parser = busboy({ headers, limits: { fileSize: Infinity } });
    parser.on('field', (name, value) => put(name, value));
    parser.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => put(name, { filename: info.filename, type: info.mimeType, bytes: Buffer.concat(chunks) }));
    });
    parser.on('close', () => resolve(out));
    parser.on('error', reject);
    parser.end(raw);
  });
}

/** A stream item: an event (framed as the provider frames it), raw bytes, or a pause. */
export type Item<E> = E | string | { delayMs: number };

/** A piece of a binary answer: bytes, a pause, or a promise to wait for. */
export type Piece = Buffer | { delayMs: number } | { wait: Promise<unknown> };

export type Plan<E = unknown> =
  /** `wait`: answer only once it resolves (an upstream still generating). */
  | { kind: 'json'; status?: number; body: unknown; wait?: Promise<unknown>; headers?: http.OutgoingHttpHeaders }
  /** `delayMs` before each event; `done: false` leaves out the provider's end marker (OpenAI's `data: [DONE]`). */
  | { kind: 'sse'; events: Item<E>[]; done?: boolean; delayMs?: number }
  /** Answer 200 with a stream, send `events`, then stall forever (until the client closes). */
  | { kind: 'stall'; events: Item<E>[] }
  /**
   * Answer 200 with bytes of media type `type` (audio), piece by piece: a piece, a pause, or a promise to wait for
   * (the test resolves it once it has read what came before: the answer is streamed, not gathered); `cut` breaks the
   * connection after the pieces instead of ending the answer.
   */
  | { kind: 'bytes'; type: string; pieces: Piece[]; cut?: boolean }
  /** Accept the request and never answer. */
  | { kind: 'hang' }
  /** Destroy the socket without answering. */
  | { kind: 'reset' }
  /** An answer computed from the request (e.g. usage counted the way the provider bills what it was sent). */
  | { kind: 'answer'; with: (r: Received) => Plan<E> };

/** What differs from one provider to the next. */
export interface Wire<E> {
  /** The path `url` ends with, e.g. `/v1`. */
  base: string;
  /** The answer when no plan is queued. */
  defaultPlan: (r: Received) => Plan<E>;
  /** A refusal that comes before any plan (a wrong key...); null lets the request through. */
  check?: (r: Received) => Plan<E> | null;
  /** One event as the provider frames it, and what it writes at the end of a stream. */
  frame: (ev: E) => string;
  end?: string;
  /** Headers on every answer; `n` is the number of the request. */
  headers?: (n: number) => http.OutgoingHttpHeaders;
  jsonType?: string;
  jsonIndent?: number;
  sseHeaders?: http.OutgoingHttpHeaders;
  keepAliveMs?: number;
}

export class FakeUpstream<E = unknown> {
  readonly requests: Received[] = [];
  /** Requests whose connection the client closed before the answer was complete. */
  clientAborts = 0;
  /** TCP connections accepted so far, and open now. */
  connections = 0;
  openConnections = 0;
  maxOpenConnections = 0;
  /** The next answers, first in first out; when empty, the wire's `defaultPlan` answers. */
  readonly plans: Plan<E>[] = [];
  private server!: http.Server;
  url = '';

  constructor(private readonly wire: Wire<E>) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = this.wire.keepAliveMs ?? 1000;
    this.server.on('connection', (socket) => {
      this.connections++;
      this.openConnections++;
      this.maxOpenConnections = Math.max(this.maxOpenConnections, this.openConnections);
      socket.on('close', () => this.openConnections--);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${this.wire.base}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  plan(...plans: Plan<E>[]): void {
    this.plans.push(...plans);
  }

  last(): Received {
    return this.requests[this.requests.length - 1];
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any = null;
    try {
      body = String(req.headers['content-type']).startsWith('multipart/form-data')
        ? await parseForm(Buffer.concat(chunks), req.headers)
        : raw
          ? JSON.parse(raw)
          : null;
    } catch {
      body = raw;
    }
    const received: Received = { method: req.method!, path: req.url!, headers: req.headers, body, raw };
    this.requests.push(received);
    res.on('close', () => {
      if (!res.writableFinished) this.clientAborts++;
    });
    const w = this.wire;
    let plan = w.check?.(received) ?? this.plans.shift() ?? w.defaultPlan(received);
    if (plan.kind === 'answer') plan = plan.with(received);
    const headers = w.headers?.(this.requests.length);
    switch (plan.kind) {
      case 'json':
        await plan.wait;
        res.writeHead(plan.status ?? 200, {
          ...headers,
          'content-type': w.jsonType ?? 'application/json',
          ...plan.headers,
        });
        res.end(JSON.stringify(plan.body, null, w.jsonIndent));
        return;
      case 'bytes':
        return writeBytes(req, res, plan, headers);
      case 'hang':
        return;
      case 'reset':
        req.socket.destroy();
        return;
      case 'sse':
      case 'stall': {
        res.writeHead(200, {
          ...headers,
          ...(w.sseHeaders ?? { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' }),
        });
        for (const ev of plan.events) {
          if (res.destroyed) return;
          if (ev && typeof ev === 'object' && 'delayMs' in ev) {
            await sleep((ev as { delayMs: number }).delayMs);
            continue;
          }
          if (plan.kind === 'sse' && plan.delayMs) await sleep(plan.delayMs);
          res.write(typeof ev === 'string' ? ev : w.frame(ev as E));
        }
        if (plan.kind === 'stall') return;
        if (plan.done !== false && w.end) res.write(w.end);
        res.end();
      }
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Writes a binary answer's pieces as they come (see Plan `bytes`). */
async function writeBytes(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  plan: Extract<Plan, { kind: 'bytes' }>,
  headers: http.OutgoingHttpHeaders | undefined,
): Promise<void> {
  res.writeHead(200, { ...headers, 'content-type': plan.type });
  for (const p of plan.pieces) {
    if (res.destroyed) return;
    if (Buffer.isBuffer(p)) res.write(p);
    else if ('wait' in p) await p.wait;
    else await sleep(p.delayMs);
  }
  if (plan.cut) req.socket.destroy();
  else res.end();
}
