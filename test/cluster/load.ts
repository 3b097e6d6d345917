/**
 * The cluster test's clients: many keys sending chat requests and streams through the load balancer at once, each
 * answer recorded as the client saw it (status, the node HAProxy says served it, whether a stream came to its end).
 */
import http from 'node:http';

export interface Outcome {
  stream: boolean;
  key: string;
  start: number;
  end: number;
  /** The HTTP status; 0 when no answer came at all (the connection to the balancer failed). */
  status: number;
  /** The node that answered (HAProxy's `x-switchyard-node`), null without an answer. */
  node: string | null;
  requestId: string | null;
  /** The answer's body: the parsed JSON, or a stream's text. */
  body: any;
  /** A stream whose body broke off before `data: [DONE]` (or a JSON body that did not arrive whole). */
  cut: boolean;
  error?: string;
}

export const chatBody = (stream: boolean, words = 'hello cluster') =>
  JSON.stringify({ model: 'paced', messages: [{ role: 'user', content: words }], max_tokens: 20, stream });

/**
 * One request, recorded, on a connection of its own: a client that reuses a connection can write its next request
 * onto one the balancer is closing at that moment, and gets "other side closed" for a request no node ever saw (a
 * client's retry question, not the gateway's). `onHeaders` runs when the answer's headers are in.
 */
export function send(
  url: string,
  key: string,
  stream: boolean,
  onHeaders: (o: Outcome) => void = () => {},
): Promise<Outcome> {
  const o: Outcome = {
    stream,
    key,
    start: Date.now(),
    end: 0,
    status: 0,
    node: null,
    requestId: null,
    body: null,
    cut: false,
  };
  const payload = chatBody(stream);
  return new Promise((resolve) => {
    const done = (error?: unknown) => {
      if (error !== undefined) o.error = String(error);
      o.end = Date.now();
      resolve(o);
    };
    const req = http.request(`${url}/v1/chat/completions`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(payload),
      },
    });
    req.on('error', done); // no answer at all (status 0), or one that broke off (cut, see below)
    req.on('response', (res) => {
      Object.assign(o, {
        status: res.statusCode,
        node: header(res, 'x-switchyard-node'),
        requestId: header(res, 'x-request-id'),
      });
      onHeaders(o);
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('aborted', () => (o.cut = true));
      res.on('error', () => (o.cut = true));
      res.on('close', () => {
        read(o, text, String(res.headers['content-type']), res.complete);
        done();
      });
    });
    req.end(payload);
  });
}

const header = (res: http.IncomingMessage, name: string) => (res.headers[name] as string | undefined) ?? null;

/** A stream is whole when it ends with [DONE]; a JSON answer when it parses. */
function read(o: Outcome, text: string, type: string, complete: boolean): void {
  if (!complete) o.cut = true;
  if (type.startsWith('text/event-stream')) {
    o.body = text;
    if (!text.trimEnd().endsWith('data: [DONE]')) o.cut = true;
    return;
  }
  try {
    o.body = JSON.parse(text);
  } catch {
    o.body = text;
    o.cut = true;
  }
}

/** Clients that keep sending (half of them streams) from random keys until stopped. */
export class Load {
  readonly outcomes: Outcome[] = [];
  /** Requests whose answer has begun and not ended, by the node that answers them. */
  readonly open = new Set<Outcome>();
  private running: Promise<void>[] = [];
  private stopped = false;

  constructor(
    private readonly url: string,
    private readonly keys: string[],
  ) {}

  start(clients: number): void {
    this.running = Array.from({ length: clients }, (_x, i) => this.client(i));
  }

  private async client(i: number): Promise<void> {
    for (let n = 0; !this.stopped; n++) {
      const key = this.keys[Math.floor(Math.random() * this.keys.length)];
      let mine: Outcome | null = null;
      const o = await send(this.url, key, (i + n) % 2 === 0, (h) => this.open.add((mine = h)));
      if (mine) this.open.delete(mine);
      this.outcomes.push(o);
    }
  }

  /** Streams under way on `node` (their headers came, their end has not). */
  streamsOn(node: string): Outcome[] {
    return [...this.open].filter((o) => o.stream && o.node === node);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }

  /** The answers that ended since `t` (ms). */
  since(t: number): Outcome[] {
    return this.outcomes.filter((o) => o.end >= t);
  }
}
