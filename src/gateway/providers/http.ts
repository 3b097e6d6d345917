/**
 * The HTTP client the upstream providers share: one pooled, kept-alive undici Agent per provider with the configured
 * time limits, JSON POSTs, SSE streams, and every failure turned into an UpstreamError. Paths, auth headers and the
 * shape of the upstream's error bodies stay in the providers.
 */
import { Agent, errors as undiciErrors, request } from 'undici';
import type { ProviderConfig } from '../../config';
import { parseSse, type SseEvent } from '../sse';
import { UpstreamError } from '../types';

type Body = Awaited<ReturnType<typeof request>>['body'];

/** What a provider reads in the JSON body of an error answer. */
export interface UpstreamErrorInfo {
  /** The upstream's own message for the caller. */
  message?: string;
  /** The status to report instead of the one the upstream answered. */
  status?: number;
  /** Added to our description of the failure (e.g. Gemini's `INVALID_ARGUMENT`). */
  code?: string;
}

export type ErrorReader = (body: unknown, status: number) => UpstreamErrorInfo;

/** OpenAI's and Anthropic's error bodies: `{"error":{"message":"..."}}`. */
export const errorMessage: ErrorReader = (body) => ({ message: str((body as { error?: { message?: unknown } }).error?.message) });

export class UpstreamHttp {
  private readonly agent: Agent;
  private readonly headers: Record<string, string>;

  /** `headers` (auth and configured ones) are sent after, so can replace, content-type and accept. */
  constructor(
    private readonly config: ProviderConfig,
    headers: Record<string, string>,
    private readonly readError: ErrorReader = errorMessage,
  ) {
    const t = config.timeouts;
    this.agent = new Agent({
      connections: config.max_connections,
      connect: { timeout: t.connect_ms },
      headersTimeout: t.first_byte_ms,
      bodyTimeout: t.idle_ms,
      keepAliveTimeout: 30_000,
    });
    this.headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers };
  }

  async json<T>(path: string, body: unknown, signal: AbortSignal): Promise<T> {
    const { res, total } = await this.send(path, body, signal);
    try {
      return (await res.json()) as T;
    } catch (e) {
      throw failure(e, total, signal);
    }
  }

  /** The answer's server-sent events, as `read` turns them into values; what `read` throws is mapped like any failure. */
  async *stream<T>(path: string, body: unknown, signal: AbortSignal, read: (events: AsyncIterable<SseEvent>) => AsyncIterable<T>): AsyncGenerator<T> {
    const { res, total } = await this.send(path, body, signal);
    try {
      yield* read(parseSse(res as AsyncIterable<Buffer>));
    } catch (e) {
      throw failure(e, total, signal);
    } finally {
      // A consumer that stopped early closes the upstream connection. Destroying a body nobody read emits an error
      // (a `read` that threw before iterating): ignore it rather than crash on an unhandled 'error' event.
      res.on('error', () => {}).destroy();
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /** Sends the request and returns the body of a successful answer; an error status becomes an UpstreamError. */
  private async send(path: string, body: unknown, signal: AbortSignal): Promise<{ res: Body; total: AbortSignal }> {
    const total = AbortSignal.timeout(this.config.timeouts.total_ms);
    let statusCode: number;
    let res: Body;
    try {
      ({ statusCode, body: res } = await request(`${this.config.base_url}${path}`, {
        method: 'POST',
        dispatcher: this.agent,
        signal: AbortSignal.any([signal, total]),
        headers: this.headers,
        body: JSON.stringify(body),
      }));
    } catch (e) {
      throw failure(e, total, signal);
    }
    if (statusCode >= 400) {
      let info: UpstreamErrorInfo = {};
      try {
        info = this.readError(JSON.parse(await res.text()), statusCode);
      } catch {
        res.destroy();
      }
      const description = `the upstream answered HTTP ${statusCode}${info.code ? ` ${info.code}` : ''}`;
      throw new UpstreamError('status', description, info.status ?? statusCode, info.message);
    }
    return { res, total };
  }
}

/** The JSON of an event's data. */
export function eventJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    throw new UpstreamError('protocol', 'the upstream sent an event that is not JSON');
  }
}

/** The JSON of an event's data, which must be an object. */
export function eventObject(data: string): object {
  const parsed = eventJson(data);
  if (!parsed || typeof parsed !== 'object') throw new UpstreamError('protocol', 'the upstream sent an event that is not an object');
  return parsed;
}

/** The JSON object of each event, until the stream closes. */
export async function* eventObjects(events: AsyncIterable<SseEvent>): AsyncGenerator<object> {
  for await (const ev of events) yield eventObject(ev.data);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}

function failure(e: unknown, total: AbortSignal, signal: AbortSignal): UpstreamError {
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
