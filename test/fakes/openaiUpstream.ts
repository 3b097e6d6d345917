/**
 * A fake OpenAI-compatible upstream on loopback: real HTTP, real SSE framing, byte for byte as OpenAI sends it
 * (`data: {json}\n\n` ... `data: [DONE]\n\n`, `usage: null` on each chunk when include_usage is on).
 * Tests script its answers with `plan`, and read what it received from `requests`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export type Plan =
  | { kind: 'json'; status?: number; body: unknown }
  | { kind: 'sse'; events: (unknown | { delayMs: number })[]; done?: boolean; delayMs?: number }
  /** Answer 200 with a stream, send `events`, then stall forever (until the client closes). */
  | { kind: 'stall'; events: unknown[] }
  /** Accept the request and never answer. */
  | { kind: 'hang' }
  /** Destroy the socket without answering. */
  | { kind: 'reset' };

export class FakeOpenAI {
  readonly requests: Received[] = [];
  /** Requests whose connection the client closed before the answer was complete. */
  clientAborts = 0;
  /** TCP connections accepted so far, and open now. */
  connections = 0;
  openConnections = 0;
  maxOpenConnections = 0;
  /** The next answers, first in first out; when empty, `defaultPlan` answers. */
  readonly plans: Plan[] = [];
  private server!: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 5000;
    this.server.on('connection', (socket) => {
      this.connections++;
      this.openConnections++;
      this.maxOpenConnections = Math.max(this.maxOpenConnections, this.openConnections);
      socket.on('close', () => this.openConnections--);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  plan(...plans: Plan[]): void {
    this.plans.push(...plans);
  }

  last(): Received {
    return this.requests[this.requests.length - 1];
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += c;
    const received: Received = { method: req.method!, path: req.url!, headers: req.headers, body: raw ? JSON.parse(raw) : null };
    this.requests.push(received);
    res.on('close', () => {
      if (!res.writableFinished) this.clientAborts++;
    });
    const plan = this.plans.shift() ?? defaultPlan(received);
    switch (plan.kind) {
      case 'json':
        res.writeHead(plan.status ?? 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(plan.body));
        return;
      case 'hang':
        return;
      case 'reset':
        req.socket.destroy();
        return;
      case 'sse':
      case 'stall': {
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
        for (const ev of plan.events) {
          if (res.destroyed) return;
          if (ev && typeof ev === 'object' && 'delayMs' in ev) {
            await sleep((ev as { delayMs: number }).delayMs);
            continue;
          }
          if (plan.kind === 'sse' && plan.delayMs) await sleep(plan.delayMs);
          res.write(typeof ev === 'string' ? ev : `data: ${JSON.stringify(ev)}\n\n`);
        }
        if (plan.kind === 'stall') return;
        if (plan.done !== false) res.write('data: [DONE]\n\n');
        res.end();
      }
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const CREATED = 1_735_689_600;

function lastUserText(body: any): string {
  const m = [...(body.messages ?? [])].reverse().find((x: any) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
}

/** What the fake answers by default: the user's words echoed back, with usage counted as words. */
export function defaultPlan(r: Received): Plan {
  const body = r.body ?? {};
  const model = body.model;
  if (r.path.endsWith('/chat/completions')) {
    const text = `Echo: ${lastUserText(body)}`;
    const usage = { prompt_tokens: 10, completion_tokens: text.split(' ').length, total_tokens: 10 + text.split(' ').length };
    if (!body.stream) {
      return {
        kind: 'json',
        body: {
          id: 'chatcmpl-fake1',
          object: 'chat.completion',
          created: CREATED,
          model,
          system_fingerprint: 'fp_fake',
          choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }],
          usage: { ...usage, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } },
        },
      };
    }
    return { kind: 'sse', events: chatStreamEvents(model, text.split(/(?= )/), body.stream_options?.include_usage === true, usage) };
  }
  if (r.path.endsWith('/completions')) {
    const text = ` and then: ${body.prompt}`;
    const usage = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };
    if (!body.stream) {
      return { kind: 'json', body: { id: 'cmpl-fake1', object: 'text_completion', created: CREATED, model, choices: [{ text, index: 0, logprobs: null, finish_reason: 'stop' }], usage } };
    }
    const events: unknown[] = text.split(/(?= )/).map((t, i, all) => ({
      id: 'cmpl-fake1', object: 'text_completion', created: CREATED, model,
      choices: [{ text: t, index: 0, logprobs: null, finish_reason: i === all.length - 1 ? 'stop' : null }],
    }));
    if (body.stream_options?.include_usage) events.push({ id: 'cmpl-fake1', object: 'text_completion', created: CREATED, model, choices: [], usage });
    return { kind: 'sse', events };
  }
  if (r.path.endsWith('/embeddings')) {
    const inputs: unknown[] = typeof body.input === 'string' || typeof body.input?.[0] === 'number' ? [body.input] : body.input;
    const data = inputs.map((_x, index) => {
      const v = [0.5, -0.25, index + 0.125];
      if (body.encoding_format === 'base64') {
        const b = Buffer.alloc(12);
        v.forEach((x, i) => b.writeFloatLE(x, i * 4));
        return { object: 'embedding', index, embedding: b.toString('base64') };
      }
      return { object: 'embedding', index, embedding: v };
    });
    return { kind: 'json', body: { object: 'list', data, model, usage: { prompt_tokens: inputs.length * 2, total_tokens: inputs.length * 2 } } };
  }
  return { kind: 'json', status: 404, body: { error: { message: 'Unknown path', type: 'invalid_request_error', param: null, code: 'unknown_url' } } };
}

/** The chunks OpenAI sends for a text answer: role, content pieces, finish, and (if asked) the usage chunk. */
export function chatStreamEvents(model: string, pieces: string[], includeUsage: boolean, usage: object, finish = 'stop'): unknown[] {
  const base = { id: 'chatcmpl-fake1', object: 'chat.completion.chunk', created: CREATED, model, system_fingerprint: 'fp_fake' };
  const u = includeUsage ? { usage: null } : {};
  const events: unknown[] = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }], ...u },
    ...pieces.map((p) => ({ ...base, choices: [{ index: 0, delta: { content: p }, logprobs: null, finish_reason: null }], ...u })),
    { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: finish }], ...u },
  ];
  if (includeUsage) events.push({ ...base, choices: [], usage });
  return events;
}
