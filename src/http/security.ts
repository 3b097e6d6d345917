/**
 * Who is calling, by the operation's security in the contract, checked before the request's body is read: the
 * bearer key and its scope (`/v1`) — and for a metered operation the key's requests per minute and whether it has
 * any money, so that a key with nothing is refused before a byte of its body is parsed; for a counted one its
 * requests per minute —; the console session cookie, plus the CSRF header on state-changing calls (`/console/api`);
 * the admin token or an operator's session of a role high enough, plus the CSRF header on state-changing calls
 * (`/admin/api`).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { KeyPrincipal, Scope } from '../accounts/keys';
import { isRefusal, touchKey } from '../accounts/keys';
import { findOperatorSession, roleAllows, type OperatorSession } from '../accounts/operators';
import { csrfMatches, findSession, type Session } from '../accounts/sessions';
import type { LimitGrant } from '../billing/limits';
import type { OperatorRole } from '../contract';
import { errors } from '../errors';
import type { App } from '../services/app';
import { bearerMatches } from '../services/consoleLimits';
import { OPERATOR_COOKIE, readCookie, SESSION_COOKIE } from '../services/views';

/** What the contract says about an operation's caller (its ENDPOINTS entry, see api.ts). */
export interface Guard {
  /**
   * bearerAuth: the scope it needs; cookieSession (+ csrfToken); adminToken or operatorSession (+ csrfToken) of at
   * least `role`; operatorSession (+ csrfToken) of any role; or nothing (public).
   */
  scheme: 'bearer' | 'session' | 'admin' | 'operator' | 'public';
  scope?: Scope;
  role?: OperatorRole;
  /** The operation, as a refused role is told what it may not call. */
  operationId?: string;
  csrf?: boolean;
  /** A paid or metered /v1 operation (the contract's x-switchyard.meter): the rate limit and money are checked here. */
  metered?: boolean;
  /** A counted operation, which costs no money: only the key's requests per minute are counted here. */
  counted?: boolean;
  /** An Anthropic-shaped operation: the key may come as `x-api-key`, errors take Anthropic's shape. */
  anthropic?: boolean;
}

/** Who the caller turned out to be; filled in as the checks pass (the log line reads what is there). */
export interface Caller {
  keyPrefix?: string;
  accountId?: number;
  /** The key's id: also of a known key refused (disabled, expired), whose refusals its owner's usage counts. */
  keyId?: number;
  principal?: KeyPrincipal;
  grant?: LimitGrant;
  session?: Session;
  /** An operator's session (the admin token is no operator: then absent). */
  operator?: OperatorSession;
}

/** Checks the caller against the guard, filling in `caller`; throws the ApiError the client gets. */
export async function authorize(
  app: App,
  guard: Guard,
  headers: IncomingHttpHeaders,
  path: string,
  caller: Caller,
): Promise<void> {
  switch (guard.scheme) {
    case 'bearer':
      return bearer(app, guard, headers, caller);
    case 'session': {
      const session = await findSession(app.db, readCookie(headers.cookie, SESSION_COOKIE));
      if (!session) throw errors.notLoggedIn();
      if (guard.csrf && !csrfMatches(session, headers['x-csrf-token'] as string | undefined)) throw errors.csrfFailed();
      caller.accountId = session.accountId;
      caller.session = session;
      return;
    }
    case 'admin':
      return admin(app, guard, headers, path, caller);
    case 'operator':
      caller.operator = await operatorSession(app, guard, headers);
      return;
    case 'public':
      return;
  }
}

/**
 * The admin API: a request with an Authorization header (or without an operator's cookie) is the admin token's —
 * an owner; without ADMIN_TOKEN such calls answer 404, as before operators existed. One with the `sy_admin` cookie
 * is an operator's, who must have passed the second factor and hold at least the operation's role.
 */
async function admin(app: App, guard: Guard, headers: IncomingHttpHeaders, path: string, caller: Caller) {
  if (headers.authorization !== undefined || readCookie(headers.cookie, OPERATOR_COOKIE) === undefined) {
    if (!app.adminTokenHash) throw errors.notFound(path);
    if (!bearerMatches(app.adminTokenHash, headers.authorization)) throw errors.invalidAdminToken();
    return;
  }
  const session = await operatorSession(app, guard, headers);
  if (!session.secondFactor) throw errors.secondFactorRequired();
  const { role } = session.operator;
  if (!roleAllows(role, guard.role!)) throw errors.insufficientRole(role, guard.operationId!, guard.role!);
  caller.operator = session;
}

/** The operator's live session of the `sy_admin` cookie (401 without), and its CSRF header when the call needs it. */
async function operatorSession(app: App, guard: Guard, headers: IncomingHttpHeaders): Promise<OperatorSession> {
  const session = await findOperatorSession(app.db, readCookie(headers.cookie, OPERATOR_COOKIE));
  if (!session) throw errors.notLoggedIn();
  if (guard.csrf && !csrfMatches(session, headers['x-csrf-token'])) throw errors.csrfFailed();
  return session;
}

async function bearer(app: App, guard: Guard, headers: IncomingHttpHeaders, caller: Caller): Promise<void> {
  const xApiKey = guard.anthropic ? headers['x-api-key'] : undefined;
  const authorization = headers.authorization ?? (typeof xApiKey === 'string' ? `Bearer ${xApiKey}` : undefined);
  const principal = await app.keys.authenticate(authorization);
  if (isRefusal(principal)) {
    caller.keyId = principal.keyId;
    caller.accountId = principal.accountId;
  }
  if (!principal || isRefusal(principal)) throw errors.invalidApiKey(principal?.refused);
  caller.keyPrefix = principal.key.prefix;
  caller.accountId = principal.accountId;
  caller.keyId = principal.key.id;
  if (guard.scope && !principal.key.scopes.includes(guard.scope)) throw errors.missingScope(guard.scope);
  touchKey(app.db, principal.key.id, (e) => app.log.warn({ err: e }, 'could not record key use'));
  caller.principal = principal;
  if (guard.metered) caller.grant = await app.metered.precheck(principal);
  else if (guard.counted) caller.grant = await app.metered.count(principal);
}
