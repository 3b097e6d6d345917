/**
 * Composes the HTTP server: Hapi receives the request, openapi-backend routes it and validates it against
 * openapi/openapi.yaml, the bearer key is checked (and its scope, read from the operation's security in the
 * contract), and the operation's handler runs. Every answer carries an x-request-id; every error has the OpenAI shape.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import Hapi from '@hapi/hapi';
import type { Boom } from '@hapi/boom';
import OpenAPIBackend, { type Context, type Operation } from 'openapi-backend';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { App } from './app';
import { authenticate, touchKey, type KeyPrincipal, type Scope } from './accounts/keys';
import { ApiError, errors } from './errors';
import { handlers } from './handlers';
import type { OperationId, Reply } from './handlers/types';
import { validationError } from './http/validation';
import type { Meter } from './gateway/gateway';

export const CONTRACT = path.join(__dirname, '..', 'openapi', 'openapi.yaml');

declare module '@hapi/hapi' {
  interface RequestApplicationState {
    requestId: string;
    keyPrefix?: string;
    meter?: () => Meter;
  }
}

export interface ServerOptions {
  port?: number;
  host?: string;
}

export async function buildServer(app: App, opts: ServerOptions = {}): Promise<Hapi.Server> {
  const api = await buildApi(app);
  const server = Hapi.server({
    port: opts.port ?? 8080,
    host: opts.host ?? '127.0.0.1',
    // text/* counts as compressible, and gzip would hold SSE chunks back until the stream ends.
    mime: { override: { 'text/event-stream': { source: 'iana', compressible: false } } },
    routes: { timeout: { server: false, socket: false } },
  });

  server.ext('onRequest', (request, h) => {
    request.app.requestId = `req_${crypto.randomUUID().replace(/-/g, '')}`;
    return h.continue;
  });

  // Hapi's own refusals (bad JSON, wrong media type, body too large) in the OpenAI error shape.
  server.ext('onPreResponse', (request, h) => {
    const res = request.response as Hapi.ResponseObject | Boom;
    if ('isBoom' in res && res.isBoom) {
      const status = res.output.statusCode;
      const err =
        status === 413
          ? errors.tooLarge(app.config.server.max_body_bytes)
          : status === 415
            ? new ApiError(415, 'invalid_request_error', 'Content-Type must be application/json', 'unsupported_media_type')
            : status === 400 && /payload/i.test(res.message)
              ? new ApiError(400, 'invalid_request_error', 'We could not parse the JSON body of your request.', 'invalid_json')
              : status < 500
                ? new ApiError(status, 'invalid_request_error', res.output.payload.message, null)
                : errors.internal();
      if (status >= 500) app.log.error({ reqId: request.app.requestId, err: res }, 'unhandled error');
      return h.response(err.toBody()).code(err.status).header('x-request-id', request.app.requestId);
    }
    (res as Hapi.ResponseObject).header('x-request-id', request.app.requestId);
    return h.continue;
  });

  server.events.on('response', (request) => {
    const res = request.response as Hapi.ResponseObject | null;
    const meter = request.app.meter?.();
    app.log.info({
      reqId: request.app.requestId,
      method: request.method.toUpperCase(),
      path: request.path,
      status: res?.statusCode,
      ms: Date.now() - request.info.received,
      key: request.app.keyPrefix,
      ...(meter && { model: meter.model, provider: meter.provider, usage: meter.usage, counted: meter.counted }),
    });
  });

  server.route({
    method: '*',
    path: '/{any*}',
    options: {
      payload: { parse: true, allow: ['application/json'], maxBytes: app.config.server.max_body_bytes, output: 'data' },
    },
    handler: async (request, h) => {
      try {
        const out = (await api.handleRequest(
          {
            method: request.method,
            path: request.path,
            query: request.query as Record<string, string>,
            headers: request.headers as Record<string, string>,
            body: request.payload,
          },
          request,
        )) as Reply;
        return toResponse(out, request, h);
      } catch (e) {
        const err = e instanceof ApiError ? e : errors.internal();
        if (!(e instanceof ApiError)) app.log.error({ reqId: request.app.requestId, err: e }, 'unhandled error');
        const res = h.response(err.toBody()).code(err.status);
        for (const [k, v] of Object.entries(err.headers)) res.header(k, v);
        return res;
      }
    },
  });
  return server;
}

async function buildApi(app: App): Promise<OpenAPIBackend> {
  const api = new OpenAPIBackend({
    definition: CONTRACT,
    quick: true, // openapi-backend checks documents against the 3.0 meta-schema; ours is 3.1 and linted by Redocly
    customizeAjv: (_ajv, opts) => {
      const ajv = new Ajv2020({ ...opts, strict: false, discriminator: true, allErrors: false });
      addFormats(ajv);
      return ajv as never;
    },
  });
  api.registerSecurityHandler('bearerAuth', async (c: Context) => {
    const principal = await authenticate(app.db, c.request.headers.authorization as string | undefined);
    return principal ?? false;
  });
  api.register({
    notFound: async (c: Context) => {
      throw errors.notFound(c.request.path);
    },
    methodNotAllowed: async (c: Context) => {
      throw errors.methodNotAllowed(c.request.method, c.request.path);
    },
    unauthorizedHandler: async () => {
      throw errors.invalidApiKey();
    },
    validationFail: async (c: Context) => {
      throw validationError(c.validation.errors);
    },
  });
  for (const [operationId, handler] of Object.entries(handlers)) {
    api.register(operationId, async (c: Context, request: Hapi.Request) => {
      const principal = c.security?.bearerAuth as KeyPrincipal;
      const scope = requiredScope(c.operation);
      request.app.keyPrefix = principal.key.prefix;
      if (scope && !principal.key.scopes.includes(scope)) throw errors.missingScope(scope);
      void touchKey(app.db, principal.key.id).catch((e) => app.log.warn({ err: e }, 'could not record key use'));
      return (handler as (i: unknown) => Promise<Reply>)({
        body: c.request.requestBody,
        params: c.request.params,
        principal,
        app,
        requestId: request.app.requestId,
        signal: clientGone(request),
      });
    });
  }
  await api.init();
  const missing = api.definition.paths
    ? Object.values(api.definition.paths).flatMap((p) => Object.values(p ?? {}))
        .map((op) => (op as { operationId?: string }).operationId)
        .filter((id): id is string => !!id && !(id in handlers))
    : [];
  if (missing.length) throw new Error(`no handler for operations: ${missing.join(', ')}`);
  api.validator.preCompileRequestValidators();
  return api;
}

/** The scope an operation needs: the first scope of its bearerAuth requirement in the contract. */
function requiredScope(op: Operation): Scope | undefined {
  return op.security?.find((s) => 'bearerAuth' in s)?.bearerAuth?.[0] as Scope | undefined;
}

/** A signal that fires when the client disconnects before the response is complete. */
function clientGone(request: Hapi.Request): AbortSignal {
  const ctrl = new AbortController();
  const res = request.raw.res;
  res.once('close', () => {
    if (!res.writableFinished) ctrl.abort();
  });
  return ctrl.signal;
}

function toResponse(out: Reply, request: Hapi.Request, h: Hapi.ResponseToolkit): Hapi.ResponseObject {
  let res: Hapi.ResponseObject;
  request.app.meter = out.meter;
  if ('sse' in out) {
    const stream = new PassThrough();
    void pump(out.sse, stream, request);
    res = h
      .response(stream)
      .type('text/event-stream')
      .header('cache-control', 'no-cache')
      .header('x-accel-buffering', 'no');
  } else {
    res = h.response(out.body as object).code(out.status ?? 200);
  }
  for (const [k, v] of Object.entries(out.headers ?? {})) res.header(k, v);
  return res;
}

/** Writes frames as they come, respecting back-pressure; stops reading the upstream when the client is gone. */
async function pump(frames: AsyncIterable<string>, stream: PassThrough, request: Hapi.Request): Promise<void> {
  const it = frames[Symbol.asyncIterator]();
  let gone = false;
  request.raw.res.once('close', () => {
    if (!request.raw.res.writableFinished) {
      gone = true;
      void it.return?.();
    }
  });
  try {
    for (let r = await it.next(); !r.done && !gone; r = await it.next()) {
      if (!stream.write(r.value)) {
        await new Promise((resolve) => {
          stream.once('drain', resolve);
          request.raw.res.once('close', resolve);
        });
      }
    }
  } catch {
    // the client went away while we waited: nothing left to tell it
  } finally {
    stream.end();
  }
}
