/**
 * Provider `anthropic`: Claude through Anthropic's Messages API (POST {base_url}/messages, API version 2023-06-01).
 * OpenAI chat requests are translated to Messages requests and the answers (whole or streamed) back to OpenAI's shape
 * (see translate.ts). Chat only: legacy completions on chat models are translated by the gateway. Connections are
 * pooled and kept alive per upstream (undici Agent), with the same time limits as the openai provider.
 */
import type { ProviderConfig } from '../../../config';
import {
  UpstreamError,
  type ChatChunk,
  type ChatRequest,
  type ChatResponse,
  type CompletionResponse,
  type EmbeddingResponse,
  type Provider,
  type UpstreamCall,
} from '../../types';
import { UpstreamHttp, eventObject } from '../http';
import { StreamTranslator, fromAnthropicResponse, toAnthropicRequest, type AnthropicResponse, type StreamEvent } from './translate';

export const ANTHROPIC_VERSION = '2023-06-01';

const chatOnly = (): never => {
  throw new UpstreamError('status', 'the anthropic provider only serves chat', 400, 'This model only supports /v1/chat/completions');
};

const now = () => Math.floor(Date.now() / 1000);

export class AnthropicProvider implements Provider {
  private readonly http: UpstreamHttp;

  constructor(config: ProviderConfig) {
    // Header names are case-insensitive: configured ones (e.g. anthropic-beta, or another anthropic-version) replace ours.
    const configured = Object.fromEntries(Object.entries(config.headers).map(([k, v]) => [k.toLowerCase(), v]));
    // Anthropic's errors, {"type":"error","error":{"type":"invalid_request_error","message":"..."}}, suit the default reader.
    this.http = new UpstreamHttp(config, {
      'anthropic-version': ANTHROPIC_VERSION,
      ...(config.api_key ? { 'x-api-key': config.api_key } : {}),
      ...configured,
    });
  }

  async chat(call: UpstreamCall<ChatRequest>): Promise<ChatResponse> {
    const body = toAnthropicRequest(call.body, call.model, call.maxOutputTokens, false);
    const created = now();
    const msg = await this.http.json<AnthropicResponse>('/messages', body, call.signal);
    return fromAnthropicResponse(msg, created);
  }

  async *chatStream(call: UpstreamCall<ChatRequest>): AsyncGenerator<ChatChunk> {
    const body = toAnthropicRequest(call.body, call.model, call.maxOutputTokens, true);
    const state = new StreamTranslator(now(), call.model);
    yield* this.http.stream('/messages', body, call.signal, async function* (events) {
      for await (const ev of events) {
        const parsed = eventObject(ev.data) as StreamEvent;
        if (typeof parsed.type !== 'string') (parsed as { type: string }).type = ev.event;
        yield* state.push(parsed);
        if (state.done) return;
      }
      throw new UpstreamError('protocol', 'the upstream stream ended without message_stop');
    });
  }

  // Configuration refuses anthropic routes for completion and embedding models; these only guard against misuse.
  async completion(): Promise<CompletionResponse> {
    return chatOnly();
  }

  async *completionStream(): AsyncGenerator<CompletionResponse> {
    chatOnly();
  }

  async embeddings(): Promise<EmbeddingResponse> {
    return chatOnly();
  }

  async close(): Promise<void> {
    await this.http.close();
  }
}
