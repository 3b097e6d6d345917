/**
 * A fake Gemini API (generativelanguage v1beta) on loopback: real HTTP, and SSE framed byte for byte as Gemini
 * frames `streamGenerateContent?alt=sse` (`data: {json}\r\n\r\n`, no [DONE]: the stream just ends). It checks the
 * `x-goog-api-key` header like Gemini (a wrong key is a 400 with reason API_KEY_INVALID).
 * Tests script its answers with `plan`, and read what it received from `requests`.
 */
import { FakeUpstream, type Plan, type Received } from './fakeUpstream';

export type { Plan, Received };

export class FakeGemini extends FakeUpstream {
  /** `apiKey`: the key requests must carry in `x-goog-api-key`. */
  constructor(apiKey?: string) {
    super({
      base: '/v1beta',
      defaultPlan,
      check: (r) => (apiKey && r.headers['x-goog-api-key'] !== apiKey ? badKey() : null),
      frame: (ev) => `data: ${JSON.stringify(ev)}\r\n\r\n`,
      jsonType: 'application/json; charset=UTF-8',
      jsonIndent: 2,
      sseHeaders: {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
      },
    });
  }
}

/** Gemini's error body, e.g. `geminiError(400, 'INVALID_ARGUMENT', '...')`. */
export function geminiError(code: number, status: string, message: string, reason?: string): unknown {
  return {
    error: {
      code,
      message,
      status,
      ...(reason
        ? { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com' }] }
        : {}),
    },
  };
}

function badKey(): Plan {
  return {
    kind: 'json',
    status: 400,
    body: geminiError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', 'API_KEY_INVALID'),
  };
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
    return geminiResponse(
      [{ text: p }],
      last ? finishReason : undefined,
      last ? usageOf(prompt, pieces.length) : { promptTokenCount: prompt, totalTokenCount: prompt },
    );
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
          return {
            kind: 'json',
            status: 400,
            body: geminiError(
              400,
              'INVALID_ARGUMENT',
              `Model name in request (${q.model}) does not match the model in the URL.`,
            ),
          };
        }
      }
      const embeddings = requests.map((q) => ({
        values: fakeVector(q.content.parts.map((p: any) => p.text).join(''), q.outputDimensionality ?? 4),
      }));
      return { kind: 'json', body: method === 'embedContent' ? { embedding: embeddings[0] } : { embeddings } };
    }
    default:
      return { kind: 'json', status: 404, body: geminiError(404, 'NOT_FOUND', `Method not found.`) };
  }
}
