/**
 * Provider `anthropic`: Claude through Anthropic's Messages API (POST {base_url}/messages, API version 2023-06-01).
 * OpenAI chat requests are translated to Messages requests and the answers (whole or streamed) back to OpenAI's shape
 * (see translate.ts). Chat only: legacy completions on chat models are translated by the gateway. Connections are
 * pooled and kept alive per upstream (undici Agent), with the same time limits as the openai provider.
 */
import { Agent, errors as undiciErrors, request } from 'undici';
import type { ProviderConfig } from '../../../config';
import { parseSse } from '../../sse';
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
import { StreamTranslator, fromAnthropicResponse, toAnthropicRequest, type AnthropicResponse, type StreamEvent } from './translate';

type Body = Awaited<ReturnType<typeof request>>['body'];

export const ANTHROPIC_VERSION = '2023-06-01';

const chatOnly = (): never => {
  throw new UpstreamError('status', 'the anthropic provider only serves chat', 400, 'This model only supports /v1/chat/completions');
};

const now = () => Math.floor(Date.now() / 1000);

export class AnthropicProvider implements Provider {
  private readonly agent: Agent;
  private readonly headers: Record<string, string>;

  constructor(private readonly config: ProviderConfig) {
    const t = config.timeouts;
    this.agent = new Agent({
      connections: config.max_connections,
      connect: { timeout: t.connect_ms },
      headersTimeout: t.first_byte_ms,
      bodyTimeout: t.idle_ms,
      keepAliveTimeout: 30_000,
    });
    // Header names are case-insensitive: configured ones (e.g. anthropic-beta, or another anthropic-version) replace ours.
    const configured = Object.fromEntries(Object.entries(config.headers).map(([k, v]) => [k.toLowerCase(), v]));
    this.headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'anthropic-version': ANTHROPIC_VERSION,
      ...(config.api_key ? { 'x-api-key': config.api_key } : {}),
      ...configured,
    };
  }

  async chat(call: UpstreamCall<ChatRequest>): Promise<ChatResponse> {
    const body = toAnthropicRequest(call.body, call.model, call.maxOutputTokens, false);
    const created = now();
    const { res, total } = await this.send(body, call.signal);
    let msg: AnthropicResponse;
    try {
      msg = (await res.json()) as AnthropicResponse;
    } catch (e) {
      throw this.failure(e, total, call.signal);
    }
    return fromAnthropicResponse(msg, created);
  }

  async *chatStream(call: UpstreamCall<ChatRequest>): AsyncGenerator<ChatChunk> {
    const body = toAnthropicRequest(call.body, call.model, call.maxOutputTokens, true);
    const state = new StreamTranslator(now(), call.model);
    const { res, total } = await this.send(body, call.signal);
    try {
      for await (const ev of parseSse(res as AsyncIterable<Buffer>)) {
        let parsed: StreamEvent;
        try {
          parsed = JSON.parse(ev.data) as StreamEvent;
        } catch {
          throw new UpstreamError('protocol', 'the upstream sent an event that is not JSON');
        }
        if (!parsed || typeof parsed !== 'object') throw new UpstreamError('protocol', 'the upstream sent an event that is not an object');
        if (typeof parsed.type !== 'string') (parsed as { type: string }).type = ev.event;
        yield* state.push(parsed);
        if (state.done) return;
      }
      throw new UpstreamError('protocol', 'the upstream stream ended without message_stop');
    } catch (e) {
      throw this.failure(e, total, call.signal);
    } finally {
      res.destroy(); // a consumer that stopped early closes the upstream connection
    }
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
    await this.agent.close();
  }

  /** Sends the request and returns the body of a successful answer; an error status becomes an UpstreamError. */
  private async send(body: unknown, signal: AbortSignal): Promise<{ res: Body; total: AbortSignal }> {
    const total = AbortSignal.timeout(this.config.timeouts.total_ms);
    const both = AbortSignal.any([signal, total]);
    let statusCode: number;
    let res: Body;
    try {
      ({ statusCode, body: res } = await request(`${this.config.base_url}/messages`, {
        method: 'POST',
        dispatcher: this.agent,
        signal: both,
        headers: this.headers,
        body: JSON.stringify(body),
      }));
    } catch (e) {
      throw this.failure(e, total, signal);
    }
    if (statusCode >= 400) {
      // Anthropic's errors: {"type":"error","error":{"type":"invalid_request_error","message":"..."}}
      let message: string | undefined;
      try {
        const text = await res.text();
        message = str((JSON.parse(text) as { error?: { message?: unknown } }).error?.message);
      } catch {
        res.destroy();
      }
      throw new UpstreamError('status', `the upstream answered HTTP ${statusCode}`, statusCode, message);
    }
    return { res, total };
  }

  private failure(e: unknown, total: AbortSignal, signal: AbortSignal): UpstreamError {
    if (e instanceof UpstreamError) return e;
    if (signal.aborted) return new UpstreamError('aborted', 'the request was cancelled');
    if (total.aborted) return new UpstreamError('timeout', 'the upstream took longer than the total time limit');
    if (
      e instanceof undiciErrors.ConnectTimeoutError ||
      e instanceof undiciErrors.HeadersTimeoutError ||
      e instanceof undiciErrors.BodyTimeoutError
    ) {
      return new UpstreamError('timeout', `the upstream timed out (${(e as Error).message})`);
    }
    if (e instanceof SyntaxError) return new UpstreamError('protocol', 'the upstream sent a body that is not JSON');
    const code = (e as { code?: string }).code ?? (e as { cause?: { code?: string } }).cause?.code ?? 'error';
    return new UpstreamError('connect', `cannot reach the upstream (${code})`);
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}
