/**
 * Tries a model's routes in order. A route that fails before anything was sent to the client (connection refused,
 * timeout, upstream 5xx or 429, unreadable answer) hands over to the next route; a request the upstream rejects as
 * the caller's fault is not retried. The last failure becomes the client's error.
 */
import type { ModelConfig, RouteConfig } from '../config';
import { ApiError, errors } from '../errors';
import { UpstreamError, type Provider } from './types';

const CALLER_FAULT = new Set([400, 413, 422]);

export class Router {
  constructor(private readonly providers: Map<string, Provider>) {}

  async run<T>(model: ModelConfig, attempt: (provider: Provider, route: RouteConfig) => Promise<T>): Promise<T> {
    let last: UpstreamError | undefined;
    for (const route of model.routes) {
      const provider = this.providers.get(route.provider)!;
      try {
        return await attempt(provider, route);
      } catch (e) {
        if (!(e instanceof UpstreamError)) throw e;
        last = e;
        if (e.reason === 'aborted' || (e.reason === 'status' && CALLER_FAULT.has(e.status!))) break;
      }
    }
    throw toApiError(last!);
  }
}

/** What the client is told about an upstream failure: never a URL or a credential. */
export function toApiError(e: UpstreamError): ApiError {
  if (e.reason === 'aborted') return new ApiError(499, 'invalid_request_error', 'The client closed the request', 'client_closed_request');
  if (e.reason === 'status' && e.status === 429) return errors.upstreamRateLimited();
  if (e.reason === 'status' && CALLER_FAULT.has(e.status!)) {
    return new ApiError(400, 'invalid_request_error', e.upstreamMessage ?? 'The upstream provider rejected the request', 'upstream_bad_request');
  }
  if (e.reason === 'timeout') return errors.upstreamUnavailable('timed out');
  if (e.reason === 'status') return errors.upstreamUnavailable(`HTTP ${e.status}`);
  if (e.reason === 'connect') return errors.upstreamUnavailable('connection failed');
  return errors.upstreamUnavailable('unreadable answer');
}

/** The error event that ends a stream which failed after it started. */
export function streamErrorBody(e: unknown) {
  const api = e instanceof UpstreamError ? toApiError(e) : e instanceof ApiError ? e : errors.internal();
  return api.toBody();
}
