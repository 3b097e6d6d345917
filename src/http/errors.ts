/**
 * Every answer gets an x-request-id, every error leaves in the OpenAI shape `{error: {message, type, param, code}}`
 * — ours (ApiError, thrown anywhere), a database that is away (503) and anything unexpected (500, never a stack
 * trace) alike —, and every answer is counted in the metrics and written as one JSON log line. The API of the
 * contract does this itself (exchange.ts); the Hapi plugin here does it for what Hapi serves (the console's files,
 * the operational endpoints, unknown paths) and for Hapi's own refusals.
 */
import crypto from 'node:crypto';
import type { Boom } from '@hapi/boom';
import type { Plugin, ResponseObject } from '@hapi/hapi';
import { isDatabaseDown } from '../db';
import { ApiError, errors } from '../errors';
import type { App } from '../services/app';

declare module '@hapi/hapi' {
  interface RequestApplicationState {
    requestId: string;
    error?: { code: string | null; message: string };
  }
}

/**
 * `req_` and 32 hex digits: the time in milliseconds (12) and 80 random bits (20). Ids that grow with time keep the
 * unique indexes they go into (usage records, ledger refs) appending at their end: a batch of settlements writes a
 * few index pages instead of one page per row. The random bits come from a pool filled 4 KB at a time.
 */
export const newRequestId = () => `req_${Date.now().toString(16).padStart(12, '0')}${randomHex10()}`;

const pool = Buffer.alloc(4096);
let used = pool.length;
function randomHex10(): string {
  if (used + 10 > pool.length) {
    crypto.randomFillSync(pool);
    used = 0;
  }
  used += 10;
  return pool.toString('hex', used - 10, used);
}

/** Console and admin answers are never cached (sessions, keys, balances). */
export const isApiConsolePath = (p: string) => p.startsWith('/console/api/') || p.startsWith('/admin/api/');

/** Our error for whatever a request failed with (a thrown value, or one of Hapi's Boom refusals). */
export function toApiError(e: unknown, app: App, reqId: string, path: string): ApiError {
  if (e instanceof ApiError) return e;
  if (isDatabaseDown(e)) {
    app.log.warn({ reqId, err: (e as Error).message }, 'the database is unreachable: 503');
    return errors.unavailable();
  }
  const boom = e as Partial<Boom>;
  const status = boom.isBoom ? boom.output!.statusCode : 500;
  if (status >= 500) {
    app.log.error({ reqId, err: e }, 'unhandled error');
    return errors.internal();
  }
  if (status === 413) return errors.tooLarge(app.config.server.max_body_bytes);
  if (status === 415) return errors.unsupportedMediaType();
  if (status === 404) return errors.notFound(path);
  if (status === 400 && /payload/i.test(boom.message ?? '')) return errors.invalidJson();
  return new ApiError(status, 'invalid_request_error', boom.output!.payload.message, null);
}

/** What one answered request leaves in the log and the metrics. */
export interface AnswerLog {
  operation: string;
  reqId: string;
  method: string;
  path: string;
  status: number | undefined;
  /** Date.now() when the request arrived. */
  received: number;
  [field: string]: unknown;
}

export function logAnswer(app: App, a: AnswerLog): void {
  const ms = Date.now() - a.received;
  app.metrics.requests.inc({ operation: a.operation, status: String(a.status ?? 0) });
  app.metrics.duration.observe({ operation: a.operation }, ms / 1000);
  if (!app.log.isLevelEnabled('info')) return;
  const { operation: _op, received: _at, ...line } = a;
  line.method = a.method.toUpperCase(); // fields set, not spread in: see fieldsOf (gateway/providers/shared.ts)
  line.ms = ms;
  app.log.info(line);
}

export const errorsPlugin: Plugin<{ app: App }> = {
  name: 'switchyard-errors',
  register(server, { app }) {
    server.ext('onRequest', (request, h) => {
      request.app.requestId = newRequestId();
      return h.continue;
    });

    server.ext('onPreResponse', (request, h) => {
      const res = request.response as ResponseObject | Boom;
      if (!('isBoom' in res && res.isBoom)) {
        (res as ResponseObject).header('x-request-id', request.app.requestId);
        return h.continue;
      }
      const err = toApiError(res, app, request.app.requestId, request.path);
      request.app.error = { code: err.code, message: err.message };
      const out = h.response(err.toBody()).code(err.status).header('x-request-id', request.app.requestId);
      for (const [k, v] of Object.entries(err.headers)) out.header(k, v);
      if (isApiConsolePath(request.path)) out.header('cache-control', 'no-store');
      return out;
    });

    server.events.on('response', (request) => {
      const res = request.response as ResponseObject | null;
      logAnswer(app, {
        operation: 'other',
        reqId: request.app.requestId,
        method: request.method,
        path: request.path,
        status: res?.statusCode,
        received: request.info.received,
        ...(request.app.error && { error: request.app.error.code, cause: request.app.error.message }),
      });
    });
  },
};
