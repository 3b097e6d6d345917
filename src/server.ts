/**
 * Composes the HTTP server: Hapi receives the request, openapi-backend routes it and validates it against
 * openapi/openapi.yaml, the caller is checked by the operation's security scheme in the contract — the bearer key
 * and its scope (`/v1`), the console session cookie plus the CSRF header on state-changing calls (`/console/api`),
 * the admin token (`/admin/api`) — and the operation's handler runs. Every answer carries an x-request-id; every
 * error has the OpenAI shape.
 *
 * The Stripe webhook needs the exact bytes Stripe signed, so its route reads the body unparsed; the server parses a
 * copy for openapi-backend's validation and hands the raw bytes to the handler (HttpInfo.rawBody).
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import Hapi from '@hapi/hapi';
import type { Boom } from '@hapi/boom';
import OpenAPIBackend, { type Context, type Operation } from 'openapi-backend';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Redis } from 'ioredis';
import type { App } from './app';
import { authenticate, touchKey, type KeyPrincipal, type Scope } from './accounts/keys';
import { csrfMatches, findSession, type Session } from './accounts/sessions';
import { adminTokenMatches, consoleServices, type ConsoleServices } from './console/services';
import { readCookie, SESSION_COOKIE } from './console/views';
import { ApiError, errors } from './errors';
import { handlers } from './handlers';
import { ADMIN_OPERATIONS, PUBLIC_OPERATIONS, SESSION_OPERATIONS, type HttpInfo, type Reply } from './handlers/types';
import { validationError } from './http/validation';
import { consoleStatic } from './http/consoleStatic';
import type { Meter } from './gateway/gateway';

export const CONTRACT = path.join(__dirname, '..', 'openapi', 'openapi.yaml');

declare module '@hapi/hapi' {
  interface RequestApplicationState {
    requestId: string;
    keyPrefix?: string;
    accountId?: number;
    meter?: () => Meter;
    /** The unparsed body (Stripe webhook only). */
    rawBody?: Buffer;
  }
}

export interface ServerOptions {
  port?: number;
  host?: string;
  /** ADMIN_TOKEN, STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, STRIPE_API_BASE (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** Shared counters for the console's log-in limits (the same Redis as the rate limits), or in memory. */
  redis?: Redis | null;
}

const WEBHOOK_PATH = '/console/api/stripe/webhook';

export async function buildServer(app: App, opts: ServerOptions = {}): Promise<Hapi.Server> {
  const services = consoleServices({ env: opts.env ?? process.env, config: app.config.console, db: app.db, log: app.log, redis: opts.redis });
  const api = await buildApi(app, services);
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
      account: request.app.accountId,
      ...(meter && { model: meter.model, provider: meter.provider, usage: meter.usage, counted: meter.counted }),
    });
  });

  await server.register(consoleStatic); // GET /console/... from console/dist (never /console/api/...)

  const handle = async (request: Hapi.Request, h: Hapi.ResponseToolkit, body: unknown) => {
    try {
      const out = (await api.handleRequest(
        {
          method: request.method,
          path: request.path,
          query: request.query as Record<string, string>,
          headers: request.headers as Record<string, string>,
          body,
        },
        request,
      )) as Reply;
      return toResponse(out, request, h);
    } catch (e) {
      const err = e instanceof ApiError ? e : errors.internal();
      if (!(e instanceof ApiError)) app.log.error({ reqId: request.app.requestId, err: e }, 'unhandled error');
      const res = h.response(err.toBody()).code(err.status);
      for (const [k, v] of Object.entries(err.headers)) res.header(k, v);
      if (isApiConsolePath(request.path)) res.header('cache-control', 'no-store');
      return res;
    }
  };
  const payload: Hapi.RouteOptionsPayload = { parse: true, allow: ['application/json'], maxBytes: app.config.server.max_body_bytes, output: 'data' };
  // Cookies are read by the console's security handler itself: a malformed cookie of another site on the same host
  // must not turn every request into a 400.
  const state: Hapi.RouteOptions['state'] = { parse: false, failAction: 'ignore' };
  const apiRoute: Hapi.RouteOptions = { payload, state };
  server.route({ method: '*', path: '/{any*}', options: apiRoute, handler: (request, h) => handle(request, h, request.payload) });
  // The API's own prefixes, stated explicitly, so that no broader route under /console can ever take them.
  server.route({ method: '*', path: '/console/api/{any*}', options: apiRoute, handler: (request, h) => handle(request, h, request.payload) });
  server.route({ method: '*', path: '/admin/api/{any*}', options: apiRoute, handler: (request, h) => handle(request, h, request.payload) });
  server.route({
    method: 'POST',
    path: WEBHOOK_PATH,
    options: { payload: { ...payload, parse: false }, state },
    handler: (request, h) => {
      const raw = Buffer.isBuffer(request.payload) ? request.payload : Buffer.alloc(0);
      request.app.rawBody = raw;
      let body: unknown;
      try {
        body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
      } catch {
        const err = new ApiError(400, 'invalid_request_error', 'We could not parse the JSON body of your request.', 'invalid_json');
        return h.response(err.toBody()).code(400);
      }
      return handle(request, h, body);
    },
  });
  return server;
}

const isApiConsolePath = (p: string) => p.startsWith('/console/api/') || p.startsWith('/admin/api/');

/** The client's address: the socket's, or behind a trusted proxy the first X-Forwarded-For entry. */
function clientAddress(request: Hapi.Request, trustProxy: boolean): string {
  const forwarded = trustProxy ? String(request.headers['x-forwarded-for'] ?? '').split(',')[0].trim() : '';
  return forwarded || request.info.remoteAddress;
}

/** What handlers learn about the exchange: headers, client address, the origin for absolute links. */
function httpInfo(request: Hapi.Request, app: App): HttpInfo {
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '').split(',')[0].trim().toLowerCase();
  const proto = forwarded === 'https' || forwarded === 'http' ? forwarded : request.server.info.protocol;
  return {
    headers: request.headers as Record<string, string | undefined>,
    remoteAddress: clientAddress(request, app.config.server.trust_proxy),
    origin: app.config.console.public_url ?? `${proto}://${request.info.host}`,
    secure: proto === 'https',
    rawBody: request.app.rawBody,
  };
}

async function buildApi(app: App, services: ConsoleServices): Promise<OpenAPIBackend> {
  const api = new OpenAPIBackend({
    definition: CONTRACT,
    quick: true, // openapi-backend checks documents against the 3.0 meta-schema; ours is 3.1 and linted by Redocly
    coerceTypes: true, // query and path parameters arrive as text: `?limit=10` → 10
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
  // The session is looked up once per request, whichever of the two console schemes asks first.
  const sessionOf = (c: Context): Promise<Session | null> => {
    const memo = c as Context & { session?: Promise<Session | null> };
    return (memo.session ??= findSession(app.db, readCookie(c.request.headers.cookie as string | undefined, SESSION_COOKIE)));
  };
  api.registerSecurityHandler('cookieSession', async (c: Context) => (await sessionOf(c)) ?? false);
  api.registerSecurityHandler('csrfToken', async (c: Context) => {
    const session = await sessionOf(c);
    return !!session && csrfMatches(session, c.request.headers['x-csrf-token']);
  });
  api.registerSecurityHandler('adminToken', (c: Context) => adminTokenMatches(services, c.request.headers.authorization));
  api.register({
    notFound: async (c: Context) => {
      throw errors.notFound(c.request.path);
    },
    methodNotAllowed: async (c: Context) => {
      throw errors.methodNotAllowed(c.request.method, c.request.path);
    },
    unauthorizedHandler: async (c: Context) => {
      const schemes = (c.operation.security ?? []).flatMap((s) => Object.keys(s));
      // A security handler that failed (the database is down...) is a 500, not a refusal.
      for (const name of schemes) {
        const result = (c.security as Record<string, unknown> | undefined)?.[name];
        if (result && typeof result === 'object' && 'error' in result && (result as { error: unknown }).error) throw (result as { error: unknown }).error;
      }
      if (schemes.includes('adminToken')) throw services.adminTokenHash ? errors.invalidAdminToken() : errors.notFound(c.request.path);
      if (schemes.includes('cookieSession')) throw c.security?.cookieSession ? errors.csrfFailed() : errors.notLoggedIn();
      throw errors.invalidApiKey();
    },
    validationFail: async (c: Context) => {
      throw validationError(c.validation.errors);
    },
  });
  for (const [operationId, handler] of Object.entries(handlers)) {
    api.register(operationId, async (c: Context, request: Hapi.Request) => {
      const input: Record<string, unknown> = {
        body: c.request.requestBody,
        // Path parameters coerced by the validator (`/keys/7` → 7); openapi-backend re-parses them as text.
        params: (c.validation?.coerced as { params?: unknown } | undefined)?.params ?? c.request.params,
        query: c.request.query,
        app,
        requestId: request.app.requestId,
        signal: clientGone(request),
        http: httpInfo(request, app),
        services,
      };
      const principal = c.security?.bearerAuth as KeyPrincipal | undefined;
      if (principal) {
        const scope = requiredScope(c.operation);
        request.app.keyPrefix = principal.key.prefix;
        request.app.accountId = principal.accountId;
        if (scope && !principal.key.scopes.includes(scope)) throw errors.missingScope(scope);
        void touchKey(app.db, principal.key.id).catch((e) => app.log.warn({ err: e }, 'could not record key use'));
        input.principal = principal;
      }
      const session = c.security?.cookieSession as Session | undefined;
      if (session) {
        request.app.accountId = session.accountId;
        input.session = session;
      }
      return (handler as (i: unknown) => Promise<Reply>)(input);
    });
  }
  await api.init();
  checkSecurity(api);
  const missing = api.definition.paths
    ? Object.values(api.definition.paths).flatMap((p) => Object.values(p ?? {}))
        .map((op) => (op as { operationId?: string }).operationId)
        .filter((id): id is string => !!id && !(id in handlers))
    : [];
  if (missing.length) throw new Error(`no handler for operations: ${missing.join(', ')}`);
  api.validator.preCompileRequestValidators();
  return api;
}

/**
 * The contract's security of every operation must match what its handler expects (src/handlers/types.ts): a
 * console operation without a session check, or a state-changing one without the CSRF check, stops start-up.
 */
function checkSecurity(api: OpenAPIBackend): void {
  const problems: string[] = [];
  for (const op of api.getOperations()) {
    const id = op.operationId ?? `${op.method} ${op.path}`;
    const reqs = op.security ?? [];
    const every = (scheme: string) => reqs.length > 0 && reqs.every((r) => scheme in r);
    const safe = op.method === 'get' || op.method === 'head';
    if ((SESSION_OPERATIONS as readonly string[]).includes(id)) {
      if (!every('cookieSession')) problems.push(`${id} must require cookieSession`);
      if (!safe && !every('csrfToken')) problems.push(`${id} changes state and must require csrfToken`);
    } else if ((ADMIN_OPERATIONS as readonly string[]).includes(id)) {
      if (!every('adminToken')) problems.push(`${id} must require adminToken`);
    } else if ((PUBLIC_OPERATIONS as readonly string[]).includes(id)) {
      if (reqs.length) problems.push(`${id} is public and must have security: []`);
    } else if (!every('bearerAuth')) {
      problems.push(`${id} must require bearerAuth`);
    }
  }
  if (problems.length) throw new Error(`the contract's security does not match the handlers: ${problems.join('; ')}`);
}

/** The scope an operation needs: the first scope of its bearerAuth requirement in the contract. */
function requiredScope(op: Operation): Scope | undefined {
  return op.security?.find((s) => 'bearerAuth' in s)?.bearerAuth?.[0] as Scope | undefined;
}

/** A signal that fires when the client disconnects before the response is complete. */
function clientGone(request: Hapi.Request): AbortSignal {
  const ctrl = new AbortController();
  const res = request.raw.res;
  const left = () => {
    if (!res.writableFinished) ctrl.abort();
  };
  res.once('close', left);
  if (hasLeft(request)) left(); // it closed before we listened: the event will not come again
  return ctrl.signal;
}

/** Whether the client's connection closed before its answer was complete. */
function hasLeft(request: Hapi.Request): boolean {
  const res = request.raw.res;
  return !res.writableFinished && (res.destroyed || !!request.raw.req.socket?.destroyed);
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
  if (isApiConsolePath(request.path)) res.header('cache-control', 'no-store');
  for (const [k, v] of Object.entries(out.headers ?? {})) res.header(k, v);
  return res;
}

/**
 * Writes frames as they come, respecting back-pressure. When the client is gone (even before we started), stops
 * reading and closes the frame source, so its clean-up (the upstream call, the settlement) always runs.
 */
async function pump(frames: AsyncIterable<string>, stream: PassThrough, request: Hapi.Request): Promise<void> {
  const it = frames[Symbol.asyncIterator]();
  const res = request.raw.res;
  let gone = hasLeft(request);
  let wake = () => {};
  const onClose = () => {
    if (!res.writableFinished) gone = true;
    wake();
  };
  res.once('close', onClose);
  try {
    for (let r = await it.next(); !r.done && !gone && !stream.destroyed; r = await it.next()) {
      if (!stream.write(r.value)) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          stream.once('drain', resolve);
          if (gone || stream.destroyed) resolve();
        });
        stream.removeListener('drain', wake);
      }
    }
  } catch {
    // the stream's own error event was already framed; anything else means the client is gone
  } finally {
    res.removeListener('close', onClose);
    await it.return?.()?.catch(() => undefined);
    stream.end();
  }
}
