import { hashPassword, verifyPassword } from '../accounts/passwords';
import {
  createOperatorSession,
  findOperatorByEmail,
  knownOperatorAddress,
  publicOperator,
  rememberOperatorAddress,
  setOperatorPassword,
  useTotpCode,
} from '../accounts/operators';
import { KNOWN_ADDRESS_MS } from '../accounts/sessions';
import { addressKey } from '../services/consoleLimits';
import { OPERATOR_SESSION_MS, operatorCookie, operatorSessionView } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /admin/api/session. Counted as the console's log-ins are, before anything is checked (429 beyond the limits;
 * the daily per-email one spares addresses the operator signed in from before, so a stranger cannot lock them out).
 * A wrong email, password or code, and a disabled operator, all get the same 401, and an unknown email costs the
 * time of a wrong password. Until TOTP is enrolled the password alone opens a session that can only enrol. With
 * `admin.oidc.allow_password: false` operators sign in through the OpenID provider only: a 403 here.
 */
export const signInOperator: Handler<'signInOperator'> = async ({ body, app, http }) => {
  if (app.oidc && !app.oidc.settings.allow_password) throw errors.passwordSignInOff(app.oidc.settings.label);
  const attempt = await app.operatorLimits.loginAttempt(body.email, http.remoteAddress, (address) =>
    knownOperatorAddress(app.db, body.email, address, KNOWN_ADDRESS_MS),
  );
  const operator = await findOperatorByEmail(app.db, body.email);
  // An operator made by OpenID Connect has no password (an empty hash): it costs the time of a wrong one.
  const check = await verifyPassword(body.password, operator?.passwordHash || null);
  if (!operator || !check.ok || operator.disabled) throw errors.invalidOperatorCredentials();
  if (operator.totpEnabled && !(await useTotpCode(app.db, operator, body.code ?? '')))
    throw errors.invalidOperatorCredentials();
  await attempt.succeeded();
  await rememberOperatorAddress(app.db, operator.id, addressKey(http.remoteAddress));
  if (check.stale) await setOperatorPassword(app.db, operator.id, await hashPassword(body.password));
  const session = await createOperatorSession(app.db, operator.id, operator.totpEnabled, OPERATOR_SESSION_MS);
  return {
    body: operatorSessionView(publicOperator(operator), { ...session, secondFactor: operator.totpEnabled }),
    headers: { 'set-cookie': operatorCookie(session.id, http.secure), 'cache-control': 'no-store' },
  };
};
