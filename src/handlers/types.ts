/**
 * The shape of an operation handler. Handlers never touch Hapi: they get the validated request and return a Reply,
 * which the HTTP layer (src/http) writes out. Types of bodies come from the generated contract types.
 *
 * What a handler is told about its caller follows the operation's security in the contract (the server checks at
 * start-up that the lists below agree with it): `/v1` operations get the API key's `principal`, console operations
 * the log-in `session`, admin and public operations nothing.
 */
import type { KeyPrincipal } from '../accounts/keys';
import type { Session } from '../accounts/sessions';
import type { LimitGrant } from '../billing/limits';
import type { BodyProfile } from '../gateway/bound';
import type { Meter } from '../gateway/types';
import type { App } from '../services/app';
import type { Client } from '../services/metered';

export type { Client };
import type { operations } from '../../generated/openapi';

export type OperationId = keyof operations;

/** Operations with `security: [{cookieSession}]` (state-changing ones also with `csrfToken`). */
export const SESSION_OPERATIONS = [
  'logout',
  'resendVerification',
  'getSession',
  'getAccount',
  'updateAccount',
  'listConsoleKeys',
  'createConsoleKey',
  'updateConsoleKey',
  'deleteConsoleKey',
  'listConsoleModels',
  'redeemCode',
  'getTopupOptions',
  'createCheckout',
  'listUsage',
  'getDailyUsage',
  'listLedger',
] as const satisfies readonly OperationId[];

/** Operations with `security: [{adminToken}]`. */
export const ADMIN_OPERATIONS = [
  'adminListAccounts',
  'adminGrantCredits',
  'adminDisableAccount',
  'adminEnableAccount',
  'adminCreateRedemptionCodes',
  'adminFarmingReport',
  'adminRevokeFreeCredits',
  'adminUpdateKey',
  'adminSetLowBalanceAlert',
] as const satisfies readonly OperationId[];

/** /v1 operations that go upstream and are paid for: the key's rate limit and money are checked before the body is read. */
export const PAID_OPERATIONS = ['createChatCompletion', 'createCompletion', 'createEmbedding', 'createMessage', 'createResponse'] as const satisfies readonly OperationId[];

/**
 * Operations whose key's requests per minute and money are checked before the body is read: the paid ones, and
 * count_tokens, which is free but costs the operator an upstream call (Anthropic's own rate limits) or tokenizer
 * time, so a key without money or over its rate may not spend them.
 */
export const METERED_OPERATIONS = [...PAID_OPERATIONS, 'countMessageTokens'] as const satisfies readonly OperationId[];

/**
 * Operations that call no upstream and cost no money, but read or write the database: counted against the key's
 * requests per minute like any call (a key could otherwise read or delete without limit); a key without money may
 * still read and delete what its account stored.
 */
export const COUNTED_OPERATIONS = ['retrieveResponse', 'deleteResponse'] as const satisfies readonly OperationId[];

/** Operations that answer errors in Anthropic's shape (`{"type":"error","error":{...}}`) and accept its x-api-key. */
export const ANTHROPIC_OPERATIONS = ['createMessage', 'countMessageTokens'] as const satisfies readonly OperationId[];

/** Operations with `security: []`. */
export const PUBLIC_OPERATIONS = ['register', 'login', 'stripeWebhook', 'verifyEmail', 'requestPasswordReset', 'confirmPasswordReset', 'getConsoleConfig'] as const satisfies readonly OperationId[];

export type SessionOperation = (typeof SESSION_OPERATIONS)[number];
export type AdminOperation = (typeof ADMIN_OPERATIONS)[number];
export type PublicOperation = (typeof PUBLIC_OPERATIONS)[number];

type JsonBody<Op extends OperationId> = operations[Op] extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B | undefined
    : undefined;
type PathParams<Op extends OperationId> = operations[Op] extends { parameters: { path: infer P } } ? P : Record<string, never>;
type QueryParams<Op extends OperationId> = operations[Op] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : Record<string, never>;

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
}

export type PaidOperation = (typeof PAID_OPERATIONS)[number];
export type MeteredOperation = (typeof METERED_OPERATIONS)[number];
export type CountedOperation = (typeof COUNTED_OPERATIONS)[number];

export type HandlerInput<Op extends OperationId> = CommonInput<Op> &
  (Op extends SessionOperation
    ? { session: Session }
    : Op extends AdminOperation | PublicOperation
      ? unknown
      : Op extends MeteredOperation | CountedOperation
        ? { principal: KeyPrincipal; grant: LimitGrant }
        : { principal: KeyPrincipal });

export type Reply = (
  | { status?: number; body: unknown }
  /** Server-sent events: each item is one frame, already framed (`data: ...\n\n`). */
  | { sse: AsyncIterable<string> }
) & {
  headers?: Record<string, string>;
  /** What the request used at an upstream; for a stream, read once the stream has ended. */
  meter?: () => Meter | null;
};

export type Handler<Op extends OperationId> = (input: HandlerInput<Op>) => Promise<Reply>;
