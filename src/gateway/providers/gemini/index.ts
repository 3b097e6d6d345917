/**
 * Provider `gemini`: Google's Gemini API (generativelanguage v1beta). Chat requests are translated to
 * generateContent / streamGenerateContent (SSE), embeddings to embedContent / batchEmbedContents, and the answers
 * back into OpenAI's shapes (see translate.ts). Legacy completions are not served: the gateway turns a completion
 * on a chat model into a chat request. The key goes in the `x-goog-api-key` header (never in the URL, where it could end
 * up in logs).
 */
import type { ProviderConfig } from '../../../config';
import {
  UpstreamError,
  type ChatChunk,
  type ChatRequest,
  type ChatResponse,
  type CompletionRequest,
  type CompletionResponse,
  type EmbeddingRequest,
  type EmbeddingResponse,
  type Provider,
  type UpstreamCall,
} from '../../types';
import { UpstreamHttp, eventObjects, str, type ErrorReader } from '../http';
import { ChatStreamTranslator, fromEmbedResponse, fromGeminiResponse, resourceName, toEmbedCall, toGeminiRequest, type SignatureStore } from './translate';
import type { GeminiError, GenerateContentResponse } from './wire';

/** Thought signatures kept for replay (see SKIP_THOUGHT_SIGNATURE); the oldest are forgotten first. */
const SIGNATURES_KEPT = 4096;

export class GeminiProvider implements Provider {
  private readonly http: UpstreamHttp;
  private readonly signatures = new Map<string, string>();

  constructor(readonly config: ProviderConfig) {
    this.http = new UpstreamHttp(config, { ...(config.api_key ? { 'x-goog-api-key': config.api_key } : {}), ...config.headers }, readError);
  }

  async chat(call: UpstreamCall<ChatRequest>): Promise<ChatResponse> {
    const store = this.store(call.model);
    const req = toGeminiRequest(call.body, store);
    const res = await this.http.json<GenerateContentResponse>(`/${path(call.model)}:generateContent`, req, call.signal);
    return fromGeminiResponse(res, call.model, store);
  }

  async *chatStream(call: UpstreamCall<ChatRequest>): AsyncGenerator<ChatChunk> {
    const store = this.store(call.model);
    const req = toGeminiRequest(call.body, store);
    const t = new ChatStreamTranslator(call.model, store);
    for await (const ev of this.http.stream(`/${path(call.model)}:streamGenerateContent?alt=sse`, req, call.signal, eventObjects)) {
      yield* t.push(ev as GenerateContentResponse);
    }
    yield* t.end();
  }

  completion(_call: UpstreamCall<CompletionRequest>): Promise<CompletionResponse> {
    return Promise.reject(notCompletions());
  }

  async *completionStream(_call: UpstreamCall<CompletionRequest>): AsyncGenerator<CompletionResponse> {
    throw notCompletions();
  }

  async embeddings(call: UpstreamCall<EmbeddingRequest>): Promise<EmbeddingResponse> {
    const e = toEmbedCall(call.body, call.model);
    const res = await this.http.json<object>(`/${path(call.model)}:${e.method}`, e.body, call.signal);
    return fromEmbedResponse(e, res, call.model);
  }

  async close(): Promise<void> {
    await this.http.close();
  }

  /** Signatures are only valid for the model that made them. */
  private store(model: string): SignatureStore {
    const key = (id: string) => `${model}\u0000${id}`;
    return {
      get: (id) => this.signatures.get(key(id)),
      set: (id, signature) => {
        this.signatures.set(key(id), signature);
        if (this.signatures.size > SIGNATURES_KEPT) this.signatures.delete(this.signatures.keys().next().value!);
      },
    };
  }
}

/** The model's resource name as a URL path, each segment escaped. */
function path(model: string): string {
  return resourceName(model).split('/').map(encodeURIComponent).join('/');
}

/** Gemini answers `{error}`, or `[{error}]` from some streaming endpoints. */
const readError: ErrorReader = (body, status) => {
  const error = ((Array.isArray(body) ? body[0] : body) as { error?: GeminiError } | undefined)?.error;
  return {
    // A bad key is our configuration's fault, not the caller's: Gemini says 400, we treat it as 401 (→ 502).
    status: status === 400 && error?.details?.some((d) => d.reason === 'API_KEY_INVALID') ? 401 : status,
    message: str(error?.message),
    code: error?.status,
  };
};

function notCompletions(): UpstreamError {
  return new UpstreamError('status', 'the gemini provider does not serve legacy completions', 400, 'This model only supports /v1/chat/completions');
}
