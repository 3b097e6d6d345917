/**
 * Hapi plugin: the API of the contract (openapi/openapi.yaml). openapi-backend reads the contract and compiles its
 * request validators (Ajv 2020) at start-up; each operation then becomes one Hapi route — a request is routed once,
 * by Hapi — whose handler parses the body (raw bytes, JSON.parse: no double parse), measures it (depth, finite
 * numbers, bytes and attachments: gateway/bound.ts), calls the operation's precompiled validators directly, and
 * runs the operation's handler. An unknown path is a 404, a known path with another method a 405.
 *
 * The Stripe webhook needs the exact bytes Stripe signed: every handler is given the raw body (HttpInfo.rawBody).
 */
import proxyaddr from 'proxy-addr';
import path from 'node:path';
import type { Plugin, Request, ResponseToolkit, RouteOptions } from '@hapi/hapi';
import type { ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import OpenAPIBackend, { type Operation } from 'openapi-backend';
import type { Scope } from '../accounts/keys';
import { errors } from '../errors';
import { BodyError, inspect, type BodyProfile } from '../gateway/bound';
import { handlers } from '../handlers';
import { ADMIN_OPERATIONS, ANTHROPIC_OPERATIONS, METERED_OPERATIONS, PUBLIC_OPERATIONS, SESSION_OPERATIONS, type HttpInfo, type Reply } from '../handlers/types';
import type { App } from '../services/app';
import { isApiConsolePath } from './errors';
import { gone, writeReply } from './reply';
import type { Guard } from './security';
import { validationError } from './validation';

export const CONTRACT = path.join(__dirname, '..', '..', 'openapi', 'openapi.yaml');

const NO_PARAMS = { path: {}, query: {}, header: {} };
const EMPTY: BodyProfile = { textBytes: 0, images: 0, audio: 0, audioBytes: 0, files: 0, fileRefs: 0, tools: false };

interface Route {
  operationId: string;
  guard: Guard;
  hasBody: boolean;
  validateBody: ValidateFunction | null;
  validateParams: ValidateFunction | null;
  run: (input: Record<string, unknown>) => Promise<Reply>;
}

export const apiPlugin: Plugin<{ app: App }> = {
  name: 'switchyard-api',
  async register(server, { app }) {
    const api = await loadContract();
    const payload: RouteOptions['payload'] = { parse: false, output: 'data', allow: ['application/json'], maxBytes: app.config.server.max_body_bytes };
    // Cookies are read by the console's security check itself: a malformed cookie of another site on the same host
    // must not turn every request into a 400.
    const state = { parse: false, failAction: 'ignore' } as const;
    const paths = new Set<string>();
    for (const op of api.getOperations()) {
      const route = routeOf(api, op);
      const options: RouteOptions = { state, app: { guard: route.guard, operationId: route.operationId } };
      if (op.method !== 'get' && op.method !== 'head') options.payload = payload;
      server.route({ method: op.method.toUpperCase() as 'GET', path: op.path, options, handler: (request, h) => handle(app, route, request, h) });
      paths.add(op.path);
    }
    for (const p of paths) {
      server.route({ method: '*', path: p, options: { state }, handler: (request) => { throw errors.methodNotAllowed(request.method, request.path); } });
    }
    server.route({ method: '*', path: '/{any*}', options: { state }, handler: (request) => { throw errors.notFound(request.path); } });
  },
};

async function loadContract(): Promise<OpenAPIBackend> {
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
  await api.init();
  const missing = api.getOperations().map((o) => o.operationId).filter((id): id is string => !!id && !(id in handlers));
  if (missing.length) throw new Error(`no handler for operations: ${missing.join(', ')}`);
  api.validator.preCompileRequestValidators();
  return api;
}

/** An operation's route: who may call it (checked against the handlers' expectations), its validators, its handler. */
function routeOf(api: OpenAPIBackend, op: Operation): Route {
  const id = op.operationId!;
  const [bodyValidator, paramsValidator] = api.validator.getRequestValidatorsForOperation(id) ?? [];
  const hasBody = !!op.requestBody;
  return {
    operationId: id,
    guard: guardOf(op),
    hasBody,
    validateBody: hasBody ? bodyValidator : null,
    // openapi-backend compiles a params validator for every operation; it only matters when there are parameters.
    validateParams: op.parameters?.length ? (hasBody ? paramsValidator : bodyValidator) : null,
    run: handlers[id as keyof typeof handlers] as unknown as Route['run'],
  };
}

/**
 * The contract's security of every operation must match what its handler expects (src/handlers/types.ts): a
 * console operation without a session check, or a state-changing one without the CSRF check, stops start-up.
 */
function guardOf(op: Operation): Guard {
  const id = op.operationId!;
  const reqs = op.security ?? [];
  const every = (scheme: string) => reqs.length > 0 && reqs.every((r) => scheme in r);
  const safe = op.method === 'get' || op.method === 'head';
  const fail = (problem: string): never => {
    throw new Error(`the contract's security does not match the handlers: ${id} ${problem}`);
  };
  if ((SESSION_OPERATIONS as readonly string[]).includes(id)) {
    if (!every('cookieSession')) fail('must require cookieSession');
    if (!safe && !every('csrfToken')) fail('changes state and must require csrfToken');
    return { scheme: 'session', csrf: !safe };
  }
  if ((ADMIN_OPERATIONS as readonly string[]).includes(id)) {
    if (!every('adminToken')) fail('must require adminToken');
    return { scheme: 'admin' };
  }
  if ((PUBLIC_OPERATIONS as readonly string[]).includes(id)) {
    if (reqs.length) fail('is public and must have security: []');
    return { scheme: 'public' };
  }
  const anthropic = (ANTHROPIC_OPERATIONS as readonly string[]).includes(id);
  const keyed = reqs.length > 0 && reqs.every((r) => 'bearerAuth' in r || (anthropic && 'anthropicApiKey' in r));
  if (!keyed || !reqs.some((r) => 'bearerAuth' in r)) fail(anthropic ? 'must require bearerAuth or anthropicApiKey' : 'must require bearerAuth');
  const scope = reqs.find((s) => 'bearerAuth' in s)?.bearerAuth?.[0] as Scope | undefined;
  return { scheme: 'bearer', scope, metered: (METERED_OPERATIONS as readonly string[]).includes(id), anthropic };
}

async function handle(app: App, route: Route, request: Request, h: ResponseToolkit) {
  const raw = Buffer.isBuffer(request.payload) ? request.payload : null;
  let body: unknown;
  let profile = EMPTY;
  if (route.hasBody && raw?.length) {
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw errors.invalidJson();
    }
    try {
      profile = inspect(body);
    } catch (e) {
      if (e instanceof BodyError) throw errors.invalidRequest(e.message, e.param);
      throw e;
    }
  }
  if (route.validateBody && !route.validateBody({ requestBody: body ?? null })) throw validationError(route.validateBody.errors);
  // Path and query parameters are coerced in place by the validator (`/keys/7` → 7, `?limit=10` → 10).
  const params = route.validateParams ? { path: { ...request.params }, query: { ...request.query }, header: request.headers } : NO_PARAMS;
  if (route.validateParams && !route.validateParams(params)) throw validationError(route.validateParams.errors);
  if (body && typeof body === 'object' && typeof (body as { model?: unknown }).model === 'string') request.app.model = (body as { model: string }).model;
  const input: Record<string, unknown> = {
    body,
    params: params.path,
    query: params.query,
    app,
    requestId: request.app.requestId,
    signal: clientGone(request),
    headers: request.headers,
    profile,
  };
  // What few handlers need of the exchange (cookies, links, the client's address), made only when asked.
  Object.defineProperty(input, 'http', { get: () => httpInfo(request, app, raw), enumerable: false });
  if (request.app.principal) input.principal = request.app.principal;
  if (request.app.grant) input.grant = request.app.grant;
  if (request.app.session) input.session = request.app.session;
  const reply = await route.run(input);
  const res = writeReply(reply, request, h);
  if (isApiConsolePath(request.path)) res.header('cache-control', 'no-store');
  return res;
}

/** The client's address: the socket's, or behind a trusted proxy the first X-Forwarded-For entry. */
/** The client's address (proxy-addr, as Express finds it): the rightmost X-Forwarded-For entry no trusted proxy wrote. */
const trusts = new WeakMap<object, (addr: string, i: number) => boolean>();
function clientAddress(request: Request, server: App['config']['server']): string {
  const trust = server.trust_proxy;
  if (trust === false) return request.info.remoteAddress;
  let compiled = trusts.get(server);
  if (!compiled) trusts.set(server, (compiled = typeof trust === 'number' ? (_a: string, i: number) => i < trust : proxyaddr.compile(trust)));
  return proxyaddr(request.raw.req, compiled);
}

/** What handlers learn about the exchange: headers, client address, the origin for absolute links. */
function httpInfo(request: Request, app: App, rawBody: Buffer | null): HttpInfo {
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '').split(',')[0].trim().toLowerCase();
  const proto = forwarded === 'https' || forwarded === 'http' ? forwarded : request.server.info.protocol;
  return {
    headers: request.headers as Record<string, string | undefined>,
    remoteAddress: clientAddress(request, app.config.server),
    origin: app.config.console.public_url ?? `${proto}://${request.info.host}`,
    secure: proto === 'https',
    rawBody: rawBody ?? undefined,
  };
}

/** A signal that fires when the client disconnects before the response is complete. */
function clientGone(request: Request): AbortSignal {
  const ctrl = new AbortController();
  const res = request.raw.res;
  const left = () => {
    if (!res.writableFinished) ctrl.abort();
  };
  res.once('close', left);
  if (gone(request)) left(); // it closed before we listened: the event will not come again
  return ctrl.signal;
}
