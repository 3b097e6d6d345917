/**
 * HTTP to the Gemini API: one pooled undici Agent per provider, the key in the `x-goog-api-key` header (never in
 * the URL, where it could end up in logs), time limits, and every failure turned into an UpstreamError.
 */
import { Agent, errors as undiciErrors, request } from 'undici';
import type { ProviderConfig } from '../../../config';
import { parseSse } from '../../sse';
import { UpstreamError } from '../../types';
import type { GeminiError } from './wire';

type Body = Awaited<ReturnType<typeof request>>['body'];

export class GeminiHttp {
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

  async json<T>(path: string, body: unknown, signal: AbortSignal): Promise<T> {
    const { res, total } = await this.send(path, body, signal);
    try {
      return (await res.json()) as T;
    } catch (e) {
      throw this.failure(e, total, signal);
    }
  }

  /** The JSON of each server-sent event. Gemini ends its streams by closing them (there is no [DONE]). */
  async *events(path: string, body: unknown, signal: AbortSignal): AsyncGenerator<unknown> {
    const { res, total } = await this.send(path, body, signal);
    try {
      for await (const ev of parseSse(res as AsyncIterable<Buffer>)) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(ev.data);
        } catch {
          throw new UpstreamError('protocol', 'the upstream sent an event that is not JSON');
        }
        if (!parsed || typeof parsed !== 'object') throw new UpstreamError('protocol', 'the upstream sent an event that is not an object');
        yield parsed;
      }
    } catch (e) {
      throw this.failure(e, total, signal);
    } finally {
      res.destroy(); // a consumer that stopped early closes the upstream connection
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
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
          ...(this.config.api_key ? { 'x-goog-api-key': this.config.api_key } : {}),
          ...this.config.headers,
        },
        body: JSON.stringify(body),
      }));
    } catch (e) {
      throw this.failure(e, total, signal);
    }
    if (statusCode >= 400) {
      let error: GeminiError | undefined;
      try {
        const parsed = JSON.parse(await res.text()) as unknown;
        // Gemini answers `{error}`, or `[{error}]` from some streaming endpoints.
        error = ((Array.isArray(parsed) ? parsed[0] : parsed) as { error?: GeminiError } | undefined)?.error;
      } catch {
        res.destroy();
      }
      // A bad key is our configuration's fault, not the caller's: Gemini says 400, we treat it as 401 (→ 502).
      const status = statusCode === 400 && error?.details?.some((d) => d.reason === 'API_KEY_INVALID') ? 401 : statusCode;
      const message = typeof error?.message === 'string' && error.message ? error.message : undefined;
      throw new UpstreamError('status', `the upstream answered HTTP ${statusCode}${error?.status ? ` ${error.status}` : ''}`, status, message);
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
