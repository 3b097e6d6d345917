/**
 * The shape of an operation handler. Handlers never touch Hapi: they get the validated request and return a Reply,
 * which the HTTP layer (src/http) writes out. Types of bodies come from the generated contract types.
 *
 * What a handler is told about its caller follows the operation's security in the contract (ENDPOINTS, derived
 * from it): `/v1` operations get the API key's `principal` (and, when the key is checked before the body is read,
 * its `grant`), console operations the log-in `session`, an operator's own operations its `operator` session, admin
 * and public operations nothing.
 */
import type { KeyPrincipal } from '../accounts/keys';
import type { OperatorSession } from '../accounts/operators';
import type { Session } from '../accounts/sessions';
import type { LimitGrant } from '../billing/limits';
import type { ENDPOINTS, FormBodies, OperationId } from '../contract';
import type { BodyProfile } from '../gateway/bound';
import type { Meter } from '../gateway/types';
import type { App } from '../services/app';
import type { Client } from '../services/metered';
import type { RequestTrace } from '../tracing';

export type { Client, OperationId };
import type { operations } from '../../generated/openapi';

type JsonBody<Op extends OperationId> = Op extends keyof FormBodies
  ? FormBodies[Op]
  : operations[Op] extends {
        requestBody: { content: { 'application/json': infer B } };
      }
    ? B
    : operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } }
      ? B | undefined
      : undefined;
type PathParams<Op extends OperationId> = operations[Op] extends { parameters: { path: infer P } }
  ? P
  : Record<string, never>;
type QueryParams<Op extends OperationId> = operations[Op] extends { parameters: { query?: infer Q } }
  ? NonNullable<Q>
  : Record<string, never>;

/** About the HTTP exchange, for handlers that need more than the body: cookies, links, client address. */
export interface HttpInfo {
  headers: Record<string, string | undefined>;
  /** The client's address (for brute-force limits). */
  remoteAddress: string;
  /** `https://host` or `http://host:port`, as the client reached us (or console.public_url). */
  origin: string;
  /** The client reached us over HTTPS (directly, or per x-forwarded-proto): cookies get `Secure`. */
  secure: boolean;
  /** The raw request body, for the Stripe webhook's signature. */
  rawBody?: Buffer;
}

interface CommonInput<Op extends OperationId> {
  body: JsonBody<Op>;
  params: PathParams<Op>;
  query: QueryParams<Op>;
  app: App;
  requestId: string;
  /** The client's side of the exchange: whether it has gone away (a signal, made when first asked for, or a check). */
  client: Client;
  http: HttpInfo;
  /** The request's headers (lower-case names). */
  headers: Record<string, string | string[] | undefined>;
  /** The body's measure (depth checked, bytes and attachments counted), for operations with a body. */
  profile: BodyProfile;
  /** The request's trace, only while tracing is on (src/tracing.ts). */
  trace?: RequestTrace;
}

/** Who calls the operation, and for a key what was checked before the body was read (its requests, its money). */
type CallerOf<Op extends OperationId> = (typeof ENDPOINTS)[Op] extends { caller: 'session' }
  ? { session: Session }
  : (typeof ENDPOINTS)[Op] extends { caller: 'operator' }
    ? { operator: OperatorSession }
    : (typeof ENDPOINTS)[Op] extends { caller: 'admin' }
      ? { operator?: OperatorSession } // the operator whose session calls; absent for the admin token
      : (typeof ENDPOINTS)[Op] extends { caller: 'key'; meter: 'none' }
        ? { principal: KeyPrincipal }
        : (typeof ENDPOINTS)[Op] extends { caller: 'key' }
          ? { principal: KeyPrincipal; grant: LimitGrant }
          : unknown;

export type HandlerInput<Op extends OperationId> = CommonInput<Op> & CallerOf<Op>;

export type Reply =
  /** JSON, or (`contentType`) text written as it is (a transcript as SubRip). */
  (
    | { status?: number; body: unknown; contentType?: string }
    /** Server-sent events: each item is one frame, already framed (`data: ...\n\n`). */
    | { sse: AsyncIterable<string> }
    /** Bytes of this media type (audio), written as they come. */
    | { binary: AsyncIterable<Uint8Array>; contentType: string }
  ) & {
    headers?: Record<string, string>;
    /**
     * What the audit log records of the answer of a state-changing admin call without a single target, when it is
     * not the body: the codes of a batch answered as CSV are recorded as JSON, each code masked by its field's name.
     */
    audit?: unknown;
    /** What the request used at an upstream; for a stream, read once the stream has ended. */
    meter?: () => Meter | null;
    /**
     * The handler wrote the call's audit record itself, in the transaction of its change (a catalog revision): the
     * HTTP layer does not record it again.
     */
    audited?: true;
  };

export type Handler<Op extends OperationId> = (input: HandlerInput<Op>) => Promise<Reply>;
