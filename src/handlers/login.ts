import { findAccountByEmail, setPasswordHash } from '../accounts/accounts';
import { hashPassword, verifyPassword } from '../accounts/passwords';
import { createSession, knownLoginAddress, rememberLoginAddress } from '../accounts/sessions';
import { addressKey } from '../services/consoleLimits';
import { accountView, sessionCookie } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /console/api/login. Attempts are counted per (email, client address), per address and per email before the
 * password is checked (429 beyond the limit; the per-email one spares addresses the account logged in from before);
 * an unknown email costs the same time as a wrong password.
 */
export const login: Handler<'login'> = async ({ body, app, http }) => {
  const attempt = await app.consoleLimits.loginAttempt(body.email, http.remoteAddress, (address) =>
    knownLoginAddress(app.db, body.email, address),
  );
  const account = await findAccountByEmail(app.db, body.email);
  const check = await verifyPassword(body.password, account?.password_hash ?? null);
  if (!account || !check.ok) throw errors.invalidCredentials();
  await attempt.succeeded();
  if (account.status !== 'active') throw errors.accountDisabled();
  await rememberLoginAddress(app.db, account.id, addressKey(http.remoteAddress));
  if (check.stale) await setPasswordHash(app.db, account.id, await hashPassword(body.password));
  const ttl = app.config.console.session_ttl_ms;
  const { id, session } = await createSession(app.db, account.id, ttl);
  return {
    body: { account: await accountView(app.db, account, http.origin), csrf_token: session.csrfToken },
    headers: { 'set-cookie': sessionCookie(id, ttl, http.secure), 'cache-control': 'no-store' },
  };
};
