/**
 * Provider `openai`: any OpenAI-compatible upstream (OpenAI, vLLM, Ollama, Groq, Together, DeepSeek...).
 * Requests are forwarded as the client wrote them (unknown fields included) with the upstream's model id;
 * connections are pooled and kept alive per upstream (undici Agent).
 */
import { Agent, errors as undiciErrors, request } from 'undici';
import type { ProviderConfig } from '../../../config';
import { parseSse } from '../../sse';
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

type Body = Awaited<ReturnType<typeof request>>['body'];

export class OpenAIProvider implements Provider {
  private readonly agent: Agent;

  constructor(private readonly config: ProviderConfig) {
    const t = config.timeouts;
    this.agent = new Agent({
      connections: config.max_connections,
      connect: { timeout: t.connect_ms },
      headersTimeout: t.first_byte_ms,
      bodyTimeout: t.idle_ms,
      keepAliveTimeout: 30_000,
    });
  }

  chat(call: UpstreamCall<ChatRequest>): Promise<ChatResponse> {
    return this.json('/chat/completions', { ...call.body, model: call.model, stream: false }, call.signal);
  }

  chatStream(call: UpstreamCall<ChatRequest>): AsyncIterable<ChatChunk> {
    // Always ask for usage; the gateway hides the usage chunk from clients that did not ask for it.
    const body = {
      ...call.body,
      model: call.model,
      stream: true,
      stream_options: { ...(call.body.stream_options ?? {}), include_usage: true },
    };
    return this.stream<ChatChunk>('/chat/completions', body, call.signal);
  }

  completion(call: UpstreamCall<CompletionRequest>): Promise<CompletionResponse> {
    return this.json('/completions', { ...call.body, model: call.model, stream: false }, call.signal);
  }

  completionStream(call: UpstreamCall<CompletionRequest>): AsyncIterable<CompletionResponse> {
    const body = {
      ...call.body,
      model: call.model,
      stream: true,
      stream_options: { ...(call.body.stream_options ?? {}), include_usage: true },
    };
    return this.stream<CompletionResponse>('/completions', body, call.signal);
  }

  embeddings(call: UpstreamCall<EmbeddingRequest>): Promise<EmbeddingResponse> {
    return this.json('/embeddings', { ...call.body, model: call.model }, call.signal);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async json<T>(path: string, body: unknown, signal: AbortSignal): Promise<T> {
    const { res, total } = await this.send(path, body, signal);
    try {
      return (await res.json()) as T;
    } catch (e) {
      throw this.failure(e, total, signal);
    }
  }

  private async *stream<T>(path: string, body: unknown, signal: AbortSignal): AsyncGenerator<T> {
    const { res, total } = await this.send(path, body, signal);
    try {
      for await (const ev of parseSse(res as AsyncIterable<Buffer>)) {
        if (ev.data === '[DONE]') return;
        let parsed: unknown;
        try {
          parsed = JSON.parse(ev.data);
        } catch {
          throw new UpstreamError('protocol', 'the upstream sent an event that is not JSON');
        }
        const error = (parsed as { error?: { message?: unknown } }).error;
        if (error && typeof error === 'object') {
          throw new UpstreamError('protocol', 'the upstream reported an error inside the stream', undefined, str(error.message));
        }
        yield parsed as T;
      }
      throw new UpstreamError('protocol', 'the upstream stream ended without [DONE]');
    } catch (e) {
      throw this.failure(e, total, signal);
    } finally {
      res.destroy(); // a consumer that stopped early closes the upstream connection
    }
  }

  /** Sends the request and returns the body of a successful answer; an error status becomes an UpstreamError. */
  private async send(path: string, body: unknown, signal: AbortSignal): Promise<{ res: Body; total: AbortSignal }> {
    const total = AbortSignal.timeout(this.config.timeouts.total_ms);
    const both = AbortSignal.any([signal, total]);
    let statusCode: number;
    let res: Body;
    try {
      ({ statusCode, body: res } = await request(`${this.config.base_url}${path}`, {
        method: 'POST',
        dispatcher: this.agent,
        signal: both,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(this.config.api_key ? { authorization: `Bearer ${this.config.api_key}` } : {}),
          ...this.config.headers,
        },
        body: JSON.stringify(body),
      }));
    } catch (e) {
      throw this.failure(e, total, signal);
    }
    if (statusCode >= 400) {
      let message: string | undefined;
      try {
        const text = await res.text();
        message = str((JSON.parse(text) as { error?: { message?: unknown } }).error?.message) ?? undefined;
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
