/**
 * Provider `openai`: any OpenAI-compatible upstream (OpenAI, vLLM, Ollama, Groq, Together, DeepSeek...).
 * Requests are forwarded as the client wrote them (unknown fields included) with the upstream's model id;
 * connections are pooled and kept alive per upstream (undici Agent).
 */
import type { ProviderConfig } from '../../../config';
import type { SseEvent } from '../../sse';
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
import { UpstreamHttp, eventObject, str } from '../http';

export class OpenAIProvider implements Provider {
  private readonly http: UpstreamHttp;

  constructor(config: ProviderConfig) {
    this.http = new UpstreamHttp(config, {
      ...(config.api_key ? { authorization: `Bearer ${config.api_key}` } : {}),
      ...config.headers,
    });
  }

  chat(call: UpstreamCall<ChatRequest>): Promise<ChatResponse> {
    return this.http.json('/chat/completions', { ...call.body, model: call.model, stream: false }, call.signal);
  }

  chatStream(call: UpstreamCall<ChatRequest>): AsyncIterable<ChatChunk> {
    return this.http.stream('/chat/completions', streaming(call), call.signal, untilDone<ChatChunk>);
  }

  completion(call: UpstreamCall<CompletionRequest>): Promise<CompletionResponse> {
    return this.http.json('/completions', { ...call.body, model: call.model, stream: false }, call.signal);
  }

  completionStream(call: UpstreamCall<CompletionRequest>): AsyncIterable<CompletionResponse> {
    return this.http.stream('/completions', streaming(call), call.signal, untilDone<CompletionResponse>);
  }

  embeddings(call: UpstreamCall<EmbeddingRequest>): Promise<EmbeddingResponse> {
    return this.http.json('/embeddings', { ...call.body, model: call.model }, call.signal);
  }

  async close(): Promise<void> {
    await this.http.close();
  }
}

/** A streaming request. Always asks for usage; the gateway hides the usage chunk from clients that did not ask for it. */
function streaming(call: UpstreamCall<ChatRequest | CompletionRequest>): object {
  const { body } = call;
  return { ...body, model: call.model, stream: true, stream_options: { ...(body.stream_options ?? {}), include_usage: true } };
}

/** The JSON of each event until [DONE]; an error reported inside the stream ends it. */
async function* untilDone<T>(events: AsyncIterable<SseEvent>): AsyncGenerator<T> {
  for await (const ev of events) {
    if (ev.data === '[DONE]') return;
    const parsed = eventObject(ev.data) as { error?: { message?: unknown }; choices?: unknown };
    const error = parsed.error;
    if (error && typeof error === 'object') {
      throw new UpstreamError('protocol', 'the upstream reported an error inside the stream', undefined, str(error.message));
    }
    if (!Array.isArray(parsed.choices)) throw new UpstreamError('protocol', 'the upstream sent a chunk without choices');
    yield parsed as T;
  }
  throw new UpstreamError('protocol', 'the upstream stream ended without [DONE]');
}
