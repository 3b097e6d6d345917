/**
 * The cluster test's clients: many keys sending chat requests and streams through the load balancer at once, each
 * answer recorded as the client saw it (status, the node HAProxy says served it, whether a stream came to its end).
 */

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

/** One request, recorded. `onHeaders` runs when the answer's headers are in (the request is now a node's). */
export async function send(
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
  let res: Response;
  try {
    res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: chatBody(stream),
    });
  } catch (e) {
    return Object.assign(o, { end: Date.now(), error: String((e as Error).cause ?? e) });
  }
  Object.assign(o, {
    status: res.status,
    node: res.headers.get('x-switchyard-node'),
    requestId: res.headers.get('x-request-id'),
  });
  onHeaders(o);
  let text = '';
  try {
    text = await res.text();
  } catch (e) {
    o.cut = true;
    o.error = String((e as Error).cause ?? e);
  }
  o.end = Date.now();
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    o.body = text;
    if (!text.trimEnd().endsWith('data: [DONE]')) o.cut = true;
  } else {
    try {
      o.body = JSON.parse(text);
    } catch {
      o.body = text;
      o.cut = true;
    }
  }
  return o;
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
