/**
 * Hapi plugin: checks the caller by the operation's security in the contract, before the request's body is read
 * (Hapi's onPreAuth): the bearer key and its scope (`/v1`) — and for a paid operation the key's requests per
 * minute and whether it has any money, so that a key with nothing is refused before a byte of its body is parsed —;
 * the console session cookie, plus the CSRF header on state-changing calls (`/console/api`); the admin token
 * (`/admin/api`). What it finds goes to the handler (request.app).
 */
import type { Plugin, Request } from '@hapi/hapi';
import type { KeyPrincipal, Scope } from '../accounts/keys';
import { touchKey } from '../accounts/keys';
import { csrfMatches, findSession, type Session } from '../accounts/sessions';
import type { LimitGrant } from '../billing/limits';
import { errors } from '../errors';
import type { App } from '../services/app';
import { bearerMatches } from '../services/consoleLimits';
import { readCookie, SESSION_COOKIE } from '../services/views';

/** What the contract says about an operation's caller (see api.ts). */
export interface Guard {
  /** bearerAuth: the scope it needs; cookieSession (+ csrfToken); adminToken; or nothing (public). */
  scheme: 'bearer' | 'session' | 'admin' | 'public';
  scope?: Scope;
  csrf?: boolean;
  /** A metered /v1 operation (METERED_OPERATIONS): the rate limit and money are checked here. */
  metered?: boolean;
  /** An Anthropic-shaped operation: the key may come as `x-api-key`, errors take Anthropic's shape. */
  anthropic?: boolean;
}

declare module '@hapi/hapi' {
  interface RequestApplicationState {
    requestId: string;
    keyPrefix?: string;
    accountId?: number;
    model?: string;
    principal?: KeyPrincipal;
    grant?: LimitGrant;
    session?: Session;
    /** The error the request ended with (code and the message the client got), for the log line. */
    error?: { code: string | null; message: string };
  }
  interface RouteOptionsApp {
    guard?: Guard;
    /** The contract's operationId (metrics, logs). */
    operationId?: string;
  }
}

export const securityPlugin: Plugin<{ app: App }> = {
  name: 'switchyard-security',
  register(server, { app }) {
    server.ext('onPreAuth', async (request, h) => {
      const guard = request.route.settings.app?.guard;
      if (guard) await check(app, guard, request);
      return h.continue;
    });
  },
};

async function check(app: App, guard: Guard, request: Request): Promise<void> {
  switch (guard.scheme) {
    case 'bearer': {
      if (app.gateway.router.draining) throw errors.unavailable(); // shutting down: new work goes to another process
      const xApiKey = guard.anthropic ? request.headers['x-api-key'] : undefined;
      const authorization = request.headers.authorization ?? (typeof xApiKey === 'string' ? `Bearer ${xApiKey}` : undefined);
      const principal = await app.keys.authenticate(authorization as string | undefined);
      if (!principal) throw errors.invalidApiKey();
      request.app.keyPrefix = principal.key.prefix;
      request.app.accountId = principal.accountId;
      if (guard.scope && !principal.key.scopes.includes(guard.scope)) throw errors.missingScope(guard.scope);
      void touchKey(app.db, principal.key.id).catch((e) => app.log.warn({ err: e }, 'could not record key use'));
      request.app.principal = principal;
      if (guard.metered) request.app.grant = await app.metered.precheck(principal);
      return;
    }
    case 'session': {
      const session = await findSession(app.db, readCookie(request.headers.cookie as string | undefined, SESSION_COOKIE));
      if (!session) throw errors.notLoggedIn();
      if (guard.csrf && !csrfMatches(session, request.headers['x-csrf-token'] as string | undefined)) throw errors.csrfFailed();
      request.app.accountId = session.accountId;
      request.app.session = session;
      return;
    }
    case 'admin':
      if (!app.adminTokenHash) throw errors.notFound(request.path);
      if (!bearerMatches(app.adminTokenHash, request.headers.authorization)) throw errors.invalidAdminToken();
      return;
    case 'public':
      return;
  }
}
