/**
 * Provider `gemini`: Google's Gemini API (generativelanguage v1beta). Chat requests are translated to
 * generateContent / streamGenerateContent (SSE), embeddings to embedContent / batchEmbedContents, and the answers
 * back into OpenAI's shapes (see translate.ts). Legacy completions go through chat (the gateway's bridge). The key
 * goes in the `x-goog-api-key` header, never in the URL, where it could end up in logs.
 */
import type { ChatChunk } from '../../types';
import { eventObjects } from '../http';
import { str } from '../shared';
import { defineProvider, type ErrorReader } from '../types';
import {
  ChatStreamTranslator,
  fromEmbedResponse,
  fromGeminiResponse,
  resourceName,
  toEmbedCall,
  toGeminiRequest,
  type SignatureStore,
} from './translate';
import type { GeminiError, GenerateContentResponse } from './wire';

/** Thought signatures kept for replay (see SKIP_THOUGHT_SIGNATURE); the oldest are forgotten first. */
const SIGNATURES_KEPT = 4096;

/** A configured provider's thought signatures, by model and tool call id: only valid for the model that made them. */
export function signatureStore(signatures: Map<string, string>, model: string): SignatureStore {
  const key = (id: string) => `${model}\u0000${id}`;
  return {
    get: (id) => signatures.get(key(id)),
    set: (id, signature) => {
      signatures.set(key(id), signature);
      if (signatures.size > SIGNATURES_KEPT) signatures.delete(signatures.keys().next().value!);
    },
  };
}

/** The model's resource name as a URL path, each segment escaped. */
const path = (model: string) => resourceName(model).split('/').map(encodeURIComponent).join('/');

/** Gemini answers `{error}`, or `[{error}]` from some streaming endpoints (and so does Vertex AI). */
export const readError: ErrorReader = (body, status) => {
  const error = ((Array.isArray(body) ? body[0] : body) as { error?: GeminiError } | undefined)?.error;
  return {
    // A bad key is our configuration's fault, not the caller's: Gemini says 400, we treat it as 401 (→ 502).
    status: status === 400 && error?.details?.some((d) => d.reason === 'API_KEY_INVALID') ? 401 : status,
    message: str(error?.message),
    code: error?.status,
  };
};

export const gemini = defineProvider<Map<string, string>>({
  type: 'gemini',
  genAi: 'gcp.gemini',
  baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
  headers: (c): Record<string, string> => (c.api_key ? { 'x-goog-api-key': c.api_key } : {}),
  errors: readError,
  state: () => new Map<string, string>(),
  operations: {
    chat: {
      path: (ctx) => `/${path(ctx.model)}:${ctx.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
      request: (body, ctx) =>
        toGeminiRequest({ ...body, max_completion_tokens: ctx.maxOutputTokens }, signatureStore(ctx.state, ctx.model)),
      response: (json, ctx) =>
        fromGeminiResponse(json as GenerateContentResponse, ctx.model, signatureStore(ctx.state, ctx.model)),
      async *stream(events, ctx): AsyncGenerator<ChatChunk> {
        const t = new ChatStreamTranslator(ctx.model, signatureStore(ctx.state, ctx.model));
        for await (const ev of eventObjects(events)) yield* t.push(ev as GenerateContentResponse);
        yield* t.end();
      },
    },
    embeddings: {
      path: (ctx, body) => `/${path(ctx.model)}:${toEmbedCall(body, ctx.model).method}`,
      request: (body, ctx) => toEmbedCall(body, ctx.model).body,
      response: (json, ctx, body) => fromEmbedResponse(toEmbedCall(body, ctx.model), json as never, ctx.model),
    },
  },
});
