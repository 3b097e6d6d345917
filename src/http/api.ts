/**
 * The API of the contract (openapi/openapi.yaml), served on Node's own request and response objects ahead of Hapi's
 * request lifecycle. openapi-backend reads the contract and compiles its request validators (Ajv 2020: the API's at
 * start-up, the console's and operators' at their first use, see COMPILED_AT_START); each operation becomes one
 * entry of a route table, so a request is routed once; its handler checks the caller (security.ts) before the body
 * is read, reads the body (raw bytes, one JSON.parse), measures it (depth, finite numbers, bytes and attachments:
 * gateway/bound.ts), calls the operation's compiled validators directly, runs the operation's handler and writes the answer in one write (exchange.ts). A known path with another method is a 405;
 * what is not the contract's (the console's files, /healthz, unknown paths) is Hapi's.
 *
 * Why not a Hapi route per operation: measured with `make bench`, Hapi's request lifecycle (request object,
 * extension points, response marshalling, head and body written separately) cost more CPU per paid request than
 * everything else the gateway does; the paid path has a budget of a few hundred microseconds.
 *
 * The Stripe webhook needs the exact bytes Stripe signed: every handler is given the raw body (HttpInfo.rawBody).
 */
import { isUtf8 } from 'node:buffer';
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import OpenAPIBackend, { type Operation } from 'openapi-backend';
import proxyaddr from 'proxy-addr';
import { CONTRACT_SHA256, ENDPOINTS, type Endpoint, type OperationId } from '../contract';
import { errors, type ApiError } from '../errors';
import { BodyError, inspect, type BodyProfile } from '../gateway/bound';
import { keepSource } from '../gateway/splice';
import { handlers } from '../handlers';
import type { Client, HttpInfo, Reply } from '../handlers/types';
import type { App } from '../services/app';
import { RequestTrace, tracing } from '../tracing';
import { operatorActor } from '../services/audit';
import { clientGone, gone, openExchange, sendError, sendReply, served, type Exchange } from './exchange';
import { audited } from './audit';
import { fieldKinds, forValidation, isForm, readForm, type FieldKinds } from './form';
import { authorize, type Caller, type Guard } from './security';
import { validationError } from './validation';

export const CONTRACT = path.join(__dirname, '..', '..', 'openapi', 'openapi.yaml');

const NO_PARAMS = { path: {}, query: {}, header: {} };
const NO_BYTES = Buffer.alloc(0);
/** Anthropic's Messages API and what is below it. */
const ANTHROPIC_PATH = /^\/v1\/messages(\/|$)/;
const EMPTY: BodyProfile = { textBytes: 0, images: 0, audio: 0, audioBytes: 0, files: 0, fileRefs: 0, tools: false };

interface Route {
  operationId: string;
  /** The contract's path (template), for the request's span name. */
  path: string;
  guard: Guard;
  hasBody: boolean;
  /** A state-changing admin call: recorded in the audit log (audit.ts). */
  audit: boolean;
  /** The body is multipart/form-data (files): how each of its fields is read. */
  form: FieldKinds | null;
  /** The operation's compiled request validators (compiled at start-up for /v1, at first use for the rest). */
  validators: () => Validators;
  run: (input: Record<string, unknown>) => Promise<Reply>;
}

interface Validators {
  body: ValidateFunction | null;
  params: ValidateFunction | null;
}

/** The operations of one path, by method (upper case). */
type Methods = Map<string, Route>;

interface Template {
  /** The path's segments; a parameter's is its name in braces. */
  segments: string[];
  methods: Methods;
}

export class Api {
  /** Paths without parameters, as written in the contract. */
  private readonly exact = new Map<string, Methods>();
  private readonly templates: Template[] = [];
  private active = 0;
  private idleWaiters: (() => void)[] = [];

  private constructor(private readonly app: App) {}

  static async load(app: App): Promise<Api> {
    const api = new Api(app);
    const contract = await loadContract();
    for (const op of contract.getOperations()) api.add(op.path, op.method.toUpperCase(), routeOf(contract, op));
    return api;
  }

  /** Serves the request if its path is one of the contract's and returns true; false leaves it to Hapi. */
  dispatch(req: IncomingMessage, res: ServerResponse): boolean {
    const url = originForm(req.url ?? '/');
    const q = url.indexOf('?');
    let p = q < 0 ? url : url.slice(0, q);
    if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
    const params: Record<string, string> = {};
    const methods = this.exact.get(p) ?? this.match(p, params);
    const anthropic = ANTHROPIC_PATH.test(p);
    if (!methods && !anthropic) return false;
    const ex = openExchange(this.app, req, res, p);
    ex.anthropic = anthropic; // Anthropic's endpoints answer even an unknown path or method in Anthropic's shape
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const route = methods?.get(method);
    if (!route) {
      sendError(this.app, ex, methods ? errors.methodNotAllowed(method, p) : errors.notFound(p));
      return true;
    }
    ex.operationId = route.operationId;
    if (tracing.on) ex.trace = traceOf(req, route);
    this.active++;
    ex.serving = true;
    void this.serve(route, ex, params, q < 0 ? '' : url.slice(q + 1)).finally(() => {
      served(this.app, ex);
      this.ended();
    });
    return true;
  }

  /** Resolves once no request of the API is being served, or after `ms` (a graceful stop's grace period). */
  async idle(ms: number): Promise<void> {
    if (!this.active) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((r) => this.idleWaiters.push(r)),
      new Promise<void>((r) => (timer = setTimeout(r, ms))),
    ]);
    clearTimeout(timer);
  }

  private ended(): void {
    if (--this.active === 0) this.idleWaiters.splice(0).forEach((w) => w());
  }

  private add(p: string, method: string, route: Route): void {
    if (!p.includes('{')) {
      const methods = this.exact.get(p) ?? new Map<string, Route>();
      this.exact.set(p, methods.set(method, route));
      return;
    }
    const segments = p.split('/');
    let t = this.templates.find((x) => x.segments.join('/') === p);
    if (!t) this.templates.push((t = { segments, methods: new Map() }));
    t.methods.set(method, route);
  }

  /** The operations of a path with parameters (one segment each, percent-decoded), filling in `params`. */
  private match(p: string, params: Record<string, string>): Methods | undefined {
    const parts = p.split('/');
    next: for (const t of this.templates) {
      if (t.segments.length !== parts.length) continue;
      const found: Record<string, string> = {};
      for (let i = 0; i < parts.length; i++) {
        const s = t.segments[i];
        if (s.startsWith('{')) {
          if (!parts[i]) continue next;
          try {
            found[s.slice(1, -1)] = decodeURIComponent(parts[i]);
          } catch {
            continue next;
          }
        } else if (s !== parts[i]) continue next;
      }
      Object.assign(params, found); // only the template that matched fills them in
      return t.methods;
    }
    return undefined;
  }

  private async serve(route: Route, ex: Exchange, pathParams: Record<string, string>, query: string): Promise<void> {
    const app = this.app;
    try {
      if (app.gateway.router.draining) throw draining(); // shutting down: new work goes to another process
      await authorize(app, route.guard, ex.req.headers, ex.path, ex.caller);
      const raw =
        route.hasBody && !route.form ? await readBody(ex.req, ex.res, app.config.server.max_body_bytes) : null;
      const { body, profile } = route.form ? await readFormBody(route, ex, app) : parse(raw);
      const validate = route.validators();
      if (!route.form && validate.body && !validate.body({ requestBody: body ?? null }))
        throw validationError(validate.body.errors);
      // Path and query parameters are coerced in place by the validator (`/keys/7` → 7, `?limit=10` → 10).
      const params = validate.params ? { path: pathParams, query: queryOf(query), header: ex.req.headers } : NO_PARAMS;
      if (validate.params && !validate.params(params)) throw validationError(validate.params.errors);
      if (body && typeof body === 'object' && typeof (body as { model?: unknown }).model === 'string')
        ex.model = (body as { model: string }).model;
      if (gone(ex.res)) throw errors.clientClosed(); // nobody waits for the answer: nothing is sent upstream or charged
      const input = new Input(app, ex, body, profile, params.path, params.query, raw);
      const run = () => route.run(input as unknown as Record<string, unknown>);
      const call = { action: route.operationId, path: ex.path, address: input.http.remoteAddress };
      const reply = route.audit ? await audited(app, { ...call, actor: actorOf(ex.caller) }, run) : await run();
      await sendReply(ex, reply);
    } catch (e) {
      sendError(app, ex, e);
    }
  }
}

/**
 * What a handler is given. A class with its fields set in one order (handlers copy it with object spread, which is
 * fast on such objects); what few handlers need of the exchange (cookies, links, the client's address) is a getter,
 * made only when asked.
 */
class Input {
  readonly requestId: string;
  readonly client: Client;
  readonly headers: IncomingMessage['headers'];
  /** The request's trace (tracing on), for the paid path's spans. */
  readonly trace: RequestTrace | undefined;
  principal?: unknown;
  grant?: unknown;
  session?: unknown;
  operator?: unknown;
  readonly #ex: Exchange;
  readonly #raw: Buffer | null;

  constructor(
    readonly app: App,
    ex: Exchange,
    readonly body: unknown,
    readonly profile: BodyProfile,
    readonly params: Record<string, unknown>,
    readonly query: Record<string, unknown>,
    raw: Buffer | null,
  ) {
    this.#ex = ex;
    this.#raw = raw;
    this.requestId = ex.requestId;
    this.client = new ClientSide(ex.res);
    this.headers = ex.req.headers;
    this.trace = ex.trace;
    const c = ex.caller;
    if (c.principal) this.principal = c.principal;
    if (c.grant) this.grant = c.grant;
    if (c.session) this.session = c.session;
    if (c.operator) this.operator = c.operator;
  }

  get http(): HttpInfo {
    return httpInfo(this.#ex.req, this.app, this.#raw);
  }
}

/**
 * The request's SERVER span, continuing the caller's trace (`traceparent`); a paid or metered call's admission follows.
 * Attributes name the operation and its route, never the query or a header's value.
 */
function traceOf(req: IncomingMessage, route: Route): RequestTrace {
  const t = new RequestTrace(req.headers, `${req.method} ${route.path}`, {
    'http.request.method': req.method ?? 'GET',
    'http.route': route.path,
    'switchyard.operation': route.operationId,
  });
  if (route.guard.scheme === 'bearer' && route.guard.metered) t.admitting();
  return t;
}

/** Who made an admin call, for the audit log: the operator of its session, or the admin token. */
function actorOf(c: Caller): string {
  return c.operator ? operatorActor(c.operator.operator) : 'admin-token';
}

/** The 503 of a process that is shutting down; the connection is closed after it, so the client's next goes elsewhere. */
function draining(): ApiError {
  const e = errors.unavailable();
  e.headers.connection = 'close';
  return e;
}

/** The client's side of the exchange; its signal (an EventTarget, costly to make) only when a stream asks for it. */
class ClientSide implements Client {
  #signal: AbortSignal | null = null;
  constructor(private readonly res: ServerResponse) {}
  get signal(): AbortSignal {
    return (this.#signal ??= clientGone(this.res));
  }
  left(): boolean {
    return this.#signal?.aborted || gone(this.res);
  }
}

/** A multipart body (files), validated as the contract types it with each file as a string. */
async function readFormBody(route: Route, ex: Exchange, app: App): Promise<{ body: unknown; profile: BodyProfile }> {
  if (!isForm(ex.req.headers['content-type'])) throw errors.unsupportedMediaType('multipart/form-data');
  const form = await readForm(ex.req, ex.res, app.config.server.max_body_bytes, route.form!);
  const validate = route.validators().body;
  if (validate && !validate({ requestBody: forValidation(form) })) throw validationError(validate.errors);
  return form;
}

/** The body as JSON and its measure; a body that is not JSON, too deep or not finite is a 400. */
function parse(raw: Buffer | null): { body: unknown; profile: BodyProfile } {
  if (!raw?.length) return { body: undefined, profile: EMPTY };
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw errors.invalidJson();
  }
  try {
    const profile = inspect(body, raw); // raw: the escapes are counted from its bytes (gateway/bound.ts)
    // Forwarded as written where the upstream's wire is the caller's (splice.ts); bytes that are not UTF-8 are not:
    // what we read of them (U+FFFD for each bad byte) is what goes upstream.
    if (isUtf8(raw)) keepSource(body, raw, 'request', profile.keys);
    return { body, profile };
  } catch (e) {
    if (e instanceof BodyError) throw errors.invalidRequest(e.message, e.param);
    throw e;
  }
}

/**
 * The request's body, at most `max` bytes (413 beyond: at once when Content-Length says so, else as soon as the
 * bytes arrive), of media type application/json (415 otherwise; a request without Content-Type is taken as JSON).
 * A client that sent `Expect: 100-continue` is asked for its body only here, once its caller and declared size passed.
 */
function readBody(req: IncomingMessage, res: ServerResponse, max: number): Buffer | Promise<Buffer> {
  const type = req.headers['content-type'];
  if (type !== undefined && !isJson(type)) throw errors.unsupportedMediaType();
  if (req.destroyed) throw errors.clientClosed(); // it will send no more, nor end
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > max) throw errors.tooLarge(max);
  // Usually the whole body came with its headers and is already buffered: taken at once, without waiting for events.
  if (req.headers['content-length'] !== undefined && req.readableFlowing === null && req.readableLength === declared)
    return declared ? (req.read() as Buffer) : NO_BYTES;
  if (req.headers.expect?.toLowerCase() === '100-continue' && !res.headersSent) res.writeContinue();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.removeListener('data', onData);
        req.resume(); // the rest is read and dropped: the answer can still be read by the client
        reject(errors.tooLarge(max));
      } else chunks.push(c);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.once('error', () => reject(errors.clientClosed()));
    req.once('close', () => {
      if (!req.complete) reject(errors.clientClosed());
    });
  });
}

/** A request line's absolute URL (`POST http://host/v1/...`, which HTTP/1.1 servers must accept) as its path and query. */
function originForm(url: string): string {
  if (url.charCodeAt(0) === 47 /* / */) return url;
  try {
    const u = new URL(url);
    return u.pathname + u.search;
  } catch {
    return url; // `*` (OPTIONS *) or garbage: not the API's
  }
}

function isJson(type: string): boolean {
  const semi = type.indexOf(';');
  return (semi < 0 ? type : type.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

/** `a=1&b=2&b=3` → {a: '1', b: ['2', '3']}. */
function queryOf(q: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (!q) return out;
  for (const [k, v] of new URLSearchParams(q)) {
    const had = out[k];
    out[k] = had === undefined ? v : [...(Array.isArray(had) ? had : [had]), v];
  }
  return out;
}

/**
 * The contract, its operations and their request validators (compiled by routeOf). openapi-backend asks for an Ajv instance per
 * validator; they share two (one for parameters, one for bodies), which halves the start-up time and keeps tens of MB of
 * compiled meta-schemas and caches out of the resident memory.
 */
async function loadContract(): Promise<OpenAPIBackend> {
  checkTables();
  const shared = new Map<boolean, Ajv2020>();
  const api = new OpenAPIBackend({
    definition: CONTRACT,
    quick: true, // openapi-backend checks documents against the 3.0 meta-schema; ours is 3.1 and linted by Redocly
    // Parameters arrive as text and are coerced (`?limit=10` → 10); bodies are JSON and are not.
    customizeAjv: (_ajv, opts) => {
      const coerce = !!opts.coerceTypes;
      let ajv = shared.get(coerce);
      if (!ajv)
        shared.set(
          coerce,
          (ajv = addFormats(new Ajv2020({ ...opts, strict: false, discriminator: true, allErrors: false })) as Ajv2020),
        );
      return ajv as never;
    },
  });
  // In quick mode `init` parses the file twice: into `document` (read only by the full mode's check of the document)
  // and again to dereference it. One parse is enough (with `unslice` below: ~1.1 MB less idle heap, measured).
  api.loadDocument = async () => api.document;
  await api.init(); // every operationId has its handler: the table is generated from the same contract (checkTables)
  unslice(api.definition, new Set());
  return api;
}

/**
 * Makes every string of the parsed contract a string of its own. The YAML parser's strings are slices of the file's
 * text (V8 makes a substring of 13 or more characters a view of the string it was cut from), so every description
 * and `$ref` kept the whole 380 KB file, stored two bytes a character (it is not all Latin-1), alive for as long as
 * the process ran.
 */
function unslice(node: unknown, seen: Set<object>): void {
  if (typeof node !== 'object' || node === null || seen.has(node)) return;
  seen.add(node);
  const o = node as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    const v = o[k];
    if (typeof v === 'string') o[k] = v.length < 13 ? v : (JSON.parse(JSON.stringify(v)) as string);
    else unslice(v, seen);
  }
}

/**
 * Who may call each operation, the handler tables and the types handlers are given are derived from the contract
 * when it is generated (src/contract.ts): a contract edited since would be served by tables that no longer say
 * what it says (an operation made private still public), so start-up stops until `npm run generate` has run.
 */
export function checkTables(contract = fs.readFileSync(CONTRACT, 'utf8')): void {
  const text = contract.replace(/\r\n/g, '\n'); // as generated on any checkout (git may turn \n into \r\n)
  if (crypto.createHash('sha256').update(text).digest('hex') !== CONTRACT_SHA256) {
    throw new Error(
      `${CONTRACT} changed since src/contract.ts was generated from it: run npm run generate (and build)`,
    );
  }
}

/**
 * Which operations have their validators compiled at start-up: the API's (/v1), whose first request after a start
 * should not wait for them (the chat completion's alone take ~0.3 s). The console's and the operators' calls, about
 * 60 of them, are compiled at their first use (~20–100 ms each, once): memory and start-up time a gateway that no
 * one signs in to does not spend.
 */
export const COMPILED_AT_START = /^\/v1\//;

/** An operation's route: who may call it (the contract's tables), its validators, its handler. */
function routeOf(api: OpenAPIBackend, op: Operation): Route {
  const id = op.operationId!;
  const hasBody = !!op.requestBody;
  let compiled: Validators | undefined;
  const validators = () => {
    if (compiled) return compiled;
    const [body, params] = api.validator.getRequestValidatorsForOperation(id) ?? [];
    // openapi-backend compiles a params validator for every operation; it only matters when there are parameters.
    compiled = {
      body: hasBody ? body : null,
      params: op.parameters?.length ? (hasBody ? params : body) : null,
    };
    return compiled;
  };
  if (COMPILED_AT_START.test(op.path)) validators();
  const multipart = (op.requestBody as { content?: Record<string, { schema?: unknown }> } | undefined)?.content?.[
    'multipart/form-data'
  ];
  return {
    operationId: id,
    path: op.path,
    guard: guardOf(ENDPOINTS[id as OperationId], id),
    audit: ENDPOINTS[id as OperationId].caller === 'admin' && op.method.toUpperCase() !== 'GET',
    hasBody,
    form: multipart ? fieldKinds(multipart.schema) : null,
    validators,
    run: handlers[id as keyof typeof handlers] as unknown as Route['run'],
  };
}

/**
 * The checks of the caller before the body is read: the key's scope and, for paid and metered operations, its
 * requests per minute and money, for counted ones its requests per minute; a session, with the CSRF header when
 * the call changes state; the admin token or an operator of the operation's role; an operator; or nothing.
 */
function guardOf(e: Endpoint, operationId: string): Guard {
  switch (e.caller) {
    case 'key':
      return {
        scheme: 'bearer',
        scope: e.scope,
        metered: e.meter === 'paid' || e.meter === 'metered',
        counted: e.meter === 'counted',
        anthropic: e.anthropicKey,
      };
    case 'session':
      return { scheme: 'session', csrf: e.csrf };
    case 'admin':
      return { scheme: 'admin', role: e.role, csrf: e.csrf, operationId };
    case 'operator':
      return { scheme: 'operator', csrf: e.csrf };
    case 'public':
      return { scheme: 'public' };
  }
}

/** Which proxies are believed (server.trust_proxy), compiled once per configuration: proxy-addr's form. */
const trusts = new WeakMap<object, (addr: string, i: number) => boolean>();
function trustOf(server: App['config']['server']): ((addr: string, i: number) => boolean) | null {
  const trust = server.trust_proxy;
  if (trust === false) return null;
  let compiled = trusts.get(server);
  if (!compiled)
    trusts.set(
      server,
      (compiled = typeof trust === 'number' ? (_a: string, i: number) => i < trust : proxyaddr.compile(trust)),
    );
  return compiled;
}

/**
 * What handlers learn about the exchange: headers, the client's address (proxy-addr, as Express finds it: the
 * rightmost X-Forwarded-For entry no trusted proxy wrote), and the scheme and origin for absolute links and Secure
 * cookies (console.public_url when set; X-Forwarded-Proto only from a trusted proxy, never from a client).
 */
function httpInfo(req: IncomingMessage, app: App, rawBody: Buffer | null): HttpInfo {
  const trust = trustOf(app.config.server);
  const socket = req.socket.remoteAddress ?? '';
  const forwarded = trust?.(socket, 0)
    ? String(req.headers['x-forwarded-proto'] ?? '')
        .split(',')[0]
        .trim()
        .toLowerCase()
    : '';
  const proto = forwarded === 'https' || forwarded === 'http' ? forwarded : 'http';
  return {
    headers: req.headers as Record<string, string | undefined>,
    remoteAddress: trust ? proxyaddr(req, trust) : socket,
    origin: app.config.console.public_url ?? `${proto}://${req.headers.host ?? 'localhost'}`,
    secure: proto === 'https',
    rawBody: rawBody ?? undefined,
  };
}
