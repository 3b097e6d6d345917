/**
 * A fake Gemini API (generativelanguage v1beta) on loopback: real HTTP, and SSE framed byte for byte as Gemini
 * frames `streamGenerateContent?alt=sse` (`data: {json}\r\n\r\n`, no [DONE]: the stream just ends). It checks the
 * `x-goog-api-key` header like Gemini (a wrong key is a 400 with reason API_KEY_INVALID).
 * Tests script its answers with `plan`, and read what it received from `requests`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  /** Path and query, e.g. `/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`. */
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export type Plan =
  | { kind: 'json'; status?: number; body: unknown }
  | { kind: 'sse'; events: (unknown | { delayMs: number })[]; delayMs?: number }
  /** Answer 200 with a stream, send `events`, then stall forever (until the client closes). */
  | { kind: 'stall'; events: unknown[] }
  /** Accept the request and never answer. */
  | { kind: 'hang' }
  /** Destroy the socket without answering. */
  | { kind: 'reset' };

export class FakeGemini {
  readonly requests: Received[] = [];
  /** Requests whose connection the client closed before the answer was complete. */
  clientAborts = 0;
  /** The next answers, first in first out; when empty, `defaultPlan` answers. */
  readonly plans: Plan[] = [];
  private server!: http.Server;
  url = '';

  /** `apiKey`: the key requests must carry in `x-goog-api-key`. */
  constructor(private readonly apiKey?: string) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1beta`;
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
    const keyOk = !this.apiKey || received.headers['x-goog-api-key'] === this.apiKey;
    const plan = keyOk ? (this.plans.shift() ?? defaultPlan(received)) : badKey();
    switch (plan.kind) {
      case 'json':
        res.writeHead(plan.status ?? 200, { 'content-type': 'application/json; charset=UTF-8' });
        res.end(JSON.stringify(plan.body, null, 2));
        return;
      case 'hang':
        return;
      case 'reset':
        req.socket.destroy();
        return;
      case 'sse':
      case 'stall': {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
        for (const ev of plan.events) {
          if (res.destroyed) return;
          if (ev && typeof ev === 'object' && 'delayMs' in ev) {
            await sleep((ev as { delayMs: number }).delayMs);
            continue;
          }
          if (plan.kind === 'sse' && plan.delayMs) await sleep(plan.delayMs);
          res.write(typeof ev === 'string' ? ev : `data: ${JSON.stringify(ev)}\r\n\r\n`);
        }
        if (plan.kind === 'stall') return;
        res.end();
      }
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Gemini's error body, e.g. `geminiError(400, 'INVALID_ARGUMENT', '...')`. */
export function geminiError(code: number, status: string, message: string, reason?: string): unknown {
  return {
    error: {
      code,
      message,
      status,
      ...(reason ? { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com' }] } : {}),
    },
  };
}

function badKey(): Plan {
  return { kind: 'json', status: 400, body: geminiError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', 'API_KEY_INVALID') };
}

function lastUserText(body: any): string {
  const c = [...(body.contents ?? [])].reverse().find((x: any) => x.role === 'user');
  return (c?.parts ?? []).map((p: any) => p.text ?? '').join('');
}

export const MODEL_VERSION = 'gemini-2.5-flash';

/** A whole GenerateContentResponse (or one stream event): the candidate's parts, its finish reason, usage. */
export function geminiResponse(parts: unknown[], finishReason?: string, usage?: object, extra: object = {}): unknown {
  return {
    candidates: [{ content: { parts, role: 'model' }, ...(finishReason ? { finishReason } : {}), index: 0 }],
    ...(usage ? { usageMetadata: usage } : {}),
    modelVersion: MODEL_VERSION,
    responseId: 'fakeResp1',
    ...extra,
  };
}

export const usageOf = (prompt: number, candidates: number, more: object = {}) => ({
  promptTokenCount: prompt,
  candidatesTokenCount: candidates,
  totalTokenCount: prompt + candidates + ((more as { thoughtsTokenCount?: number }).thoughtsTokenCount ?? 0),
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  ...more,
});

/** The events Gemini streams for a text answer: one per piece, each with the usage so far, finish on the last. */
export function textStreamEvents(pieces: string[], finishReason = 'STOP', prompt = 10): unknown[] {
  return pieces.map((p, i) => {
    const last = i === pieces.length - 1;
    return geminiResponse([{ text: p }], last ? finishReason : undefined, last ? usageOf(prompt, pieces.length) : { promptTokenCount: prompt, totalTokenCount: prompt });
  });
}

/** A deterministic vector for a text, `dims` long. */
export function fakeVector(text: string, dims = 4): number[] {
  return Array.from({ length: dims }, (_, i) => ((text.length + i) % 8) / 8 - 0.5);
}

/** What the fake answers by default: the user's words echoed back, with usage counted as words. */
export function defaultPlan(r: Received): Plan {
  const body = r.body ?? {};
  const m = /^\/v1beta\/models\/([^/:?]+):(\w+)(\?.*)?$/.exec(r.path);
  if (!m) return { kind: 'json', status: 404, body: geminiError(404, 'NOT_FOUND', `Requested entity was not found.`) };
  const [, model, method, query] = m;
  switch (method) {
    case 'generateContent': {
      const text = `Echo: ${lastUserText(body)}`;
      return { kind: 'json', body: geminiResponse([{ text }], 'STOP', usageOf(10, text.split(' ').length)) };
    }
    case 'streamGenerateContent': {
      const pieces = `Echo: ${lastUserText(body)}`.split(/(?= )/);
      if (query !== '?alt=sse') {
        // Without alt=sse Gemini streams one JSON array; the provider must never ask for that.
        return { kind: 'json', body: textStreamEvents(pieces) };
      }
      return { kind: 'sse', events: textStreamEvents(pieces) };
    }
    case 'embedContent':
    case 'batchEmbedContents': {
      const requests: any[] = method === 'embedContent' ? [body] : (body.requests ?? []);
      for (const q of requests) {
        if (q.model !== `models/${model}`) {
          return { kind: 'json', status: 400, body: geminiError(400, 'INVALID_ARGUMENT', `Model name in request (${q.model}) does not match the model in the URL.`) };
        }
      }
      const embeddings = requests.map((q) => ({ values: fakeVector(q.content.parts.map((p: any) => p.text).join(''), q.outputDimensionality ?? 4) }));
      return { kind: 'json', body: method === 'embedContent' ? { embedding: embeddings[0] } : { embeddings } };
    }
    default:
      return { kind: 'json', status: 404, body: geminiError(404, 'NOT_FOUND', `Method not found.`) };
  }
}
