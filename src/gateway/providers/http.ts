/**
 * The HTTP client the upstream providers share: one pooled, kept-alive undici Agent per provider with the configured
 * time limits, JSON POSTs, streams, and every failure turned into an UpstreamError. URLs, headers and the shape of
 * the upstream's error bodies come from the provider's descriptor (see provider.ts).
 */
import { Agent, errors as undiciErrors, request } from 'undici';
import type { ProviderConfig } from '../../config';
import { parseSse, type SseEvent } from '../sse';
import { UpstreamError } from '../types';
import type { ErrorReader, OutgoingRequest } from './types';

type Body = Awaited<ReturnType<typeof request>>['body'];

/** OpenAI's and Anthropic's error bodies: `{"error":{"message":"..."}}`. */
export const errorMessage: ErrorReader = (body) => ({ message: str((body as { error?: { message?: unknown } }).error?.message) });

export class UpstreamHttp {
  private readonly agent: Agent;

  constructor(
    private readonly config: ProviderConfig,
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
  }

  async json(req: OutgoingRequest, signal: AbortSignal): Promise<unknown> {
    const res = await this.send(req, signal);
    try {
      return await res.json();
    } catch (e) {
      throw failure(e, signal);
    }
  }

  /** The answer's events (server-sent events unless `framing` says otherwise), as `read` turns them into values. */
  async *stream<T>(
    req: OutgoingRequest,
    signal: AbortSignal,
    read: (events: AsyncIterable<SseEvent>) => AsyncIterable<T>,
    framing: (body: AsyncIterable<Buffer>) => AsyncIterable<SseEvent> = parseSse,
  ): AsyncGenerator<T> {
    const res = await this.send(req, signal);
    try {
      yield* read(framing(res as AsyncIterable<Buffer>));
    } catch (e) {
      throw failure(e, signal);
    } finally {
      // A consumer that stopped early closes the upstream connection. Destroying a body nobody read emits an error
      // (a `read` that threw before iterating): ignore it rather than crash on an unhandled 'error' event.
      res.on('error', () => {}).destroy();
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /**
   * Sends the request and returns the body of a successful answer; an error status becomes an UpstreamError.
   * `signal` also carries the route's total time limit (the router aborts it with a timeout).
   */
  private async send(req: OutgoingRequest, signal: AbortSignal): Promise<Body> {
    let statusCode: number;
    let res: Body;
    try {
      ({ statusCode, body: res } = await request(req.url, { method: req.method, dispatcher: this.agent, signal, headers: req.headers, body: req.body }));
    } catch (e) {
      throw failure(e, signal);
    }
    if (statusCode >= 400) {
      let info: ReturnType<ErrorReader> = {};
      try {
        info = this.readError(JSON.parse(await res.text()), statusCode);
      } catch {
        res.destroy();
      }
      const description = `the upstream answered HTTP ${statusCode}${info.code ? ` ${info.code}` : ''}`;
      throw new UpstreamError('status', description, info.status ?? statusCode, info.message);
    }
    return res;
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

function failure(e: unknown, signal: AbortSignal): UpstreamError {
  if (e instanceof UpstreamError) return e;
  // The router aborts with the reason: a timeout of the route, or the client gone.
  if (signal.aborted) return signal.reason instanceof UpstreamError ? signal.reason : new UpstreamError('aborted', 'the request was cancelled');
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
