/**
 * Hapi plugin: every request gets an x-request-id; every error leaves in the OpenAI shape
 * `{error: {message, type, param, code}}` — ours (ApiError, thrown anywhere) and Hapi's own refusals (bad JSON,
 * wrong media type, body too large) alike, never a stack trace; one JSON log line is written per request, and it
 * is counted in the metrics (by operation and status).
 */
import crypto from 'node:crypto';
import type { Boom } from '@hapi/boom';
import type { Plugin, Request, ResponseObject } from '@hapi/hapi';
import { isDatabaseDown } from '../db';
import { anthropicError, ApiError, errors } from '../errors';
import type { App } from '../services/app';

export const isApiConsolePath = (p: string) => p.startsWith('/console/api/') || p.startsWith('/admin/api/');

/** Our error for whatever a request ended with. */
export function toApiError(res: Boom | ApiError, app: App, request: Request): ApiError {
  if (res instanceof ApiError) return res;
  const status = res.output.statusCode;
  if (isDatabaseDown(res)) {
    app.log.warn({ reqId: request.app.requestId, err: (res as Error).message }, 'the database is unreachable: 503');
    return errors.unavailable();
  }
  if (status >= 500) app.log.error({ reqId: request.app.requestId, err: res }, 'unhandled error');
  if (status === 413) return errors.tooLarge(app.config.server.max_body_bytes);
  if (status === 415) return new ApiError(415, 'invalid_request_error', 'Content-Type must be application/json', 'unsupported_media_type');
  if (status === 404) return errors.notFound(request.path);
  if (status === 400 && /payload/i.test(res.message)) return errors.invalidJson();
  if (status < 500) return new ApiError(status, 'invalid_request_error', res.output.payload.message, null);
  return errors.internal();
}

export const errorsPlugin: Plugin<{ app: App }> = {
  name: 'switchyard-errors',
  register(server, { app }) {
    server.ext('onRequest', (request, h) => {
      request.app.requestId = `req_${crypto.randomUUID().replace(/-/g, '')}`;
      return h.continue;
    });

    server.ext('onPreResponse', (request, h) => {
      const res = request.response as ResponseObject | Boom;
      if (!('isBoom' in res && res.isBoom)) {
        (res as ResponseObject).header('x-request-id', request.app.requestId);
        return h.continue;
      }
      const err = toApiError(res as Boom | ApiError, app, request);
      request.app.error = { code: err.code, message: err.message };
      // Anthropic's endpoints answer in Anthropic's shape and with its statuses.
      const shaped = request.route.settings.app?.guard?.anthropic ? anthropicError(err) : { status: err.status, body: err.toBody() };
      const out = h.response(shaped.body).code(shaped.status).header('x-request-id', request.app.requestId);
      for (const [k, v] of Object.entries(err.headers)) out.header(k, v);
      if (isApiConsolePath(request.path)) out.header('cache-control', 'no-store');
      return out;
    });

    server.events.on('response', (request) => {
      const res = request.response as ResponseObject | null;
      const operation = request.route.settings.app?.operationId ?? 'other';
      app.metrics.requests.inc({ operation, status: String(res?.statusCode ?? 0) });
      app.metrics.duration.observe({ operation }, (Date.now() - request.info.received) / 1000);
      if (!app.log.isLevelEnabled('info')) return;
      const meter = request.app.meter?.();
      app.log.info({
        reqId: request.app.requestId,
        method: request.method.toUpperCase(),
        path: request.path,
        status: res?.statusCode,
        ms: Date.now() - request.info.received,
        key: request.app.keyPrefix,
        account: request.app.accountId,
        ...(meter && { model: request.app.model, provider: meter.provider, usage: meter.usage, counted: meter.counted }),
        ...(request.app.error && { error: request.app.error.code, cause: request.app.error.message }),
      });
    });
  },
};
