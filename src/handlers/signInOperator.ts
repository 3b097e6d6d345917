import { hashPassword, verifyPassword } from '../accounts/passwords';
import {
  createOperatorSession,
  findOperatorByEmail,
  knownOperatorAddress,
  publicOperator,
  rememberOperatorAddress,
  setOperatorPassword,
  useTotpCode,
  type OperatorSecrets,
} from '../accounts/operators';
import { KNOWN_ADDRESS_MS } from '../accounts/sessions';
import { recordSignIn, type SignInFailure } from '../services/audit';
import { addressKey } from '../services/consoleLimits';
import { OPERATOR_SESSION_MS, operatorCookie, operatorSessionView } from '../services/views';
import { errors } from '../errors';
import { SecretKeyError } from '../secrets';
import type { App } from '../services/app';
import type { Handler } from './types';

/**
 * Whether the code is right. A TOTP secret that cannot be opened (SWITCHYARD_SECRET_KEY missing or another than the
 * one it was sealed under) refuses the sign-in as a wrong code would, and says why in the log for the people who run
 * the gateway: a 500 would tell a stranger more, and the operator can do nothing about it but ask them.
 */
async function totpCodeOk(app: App, operator: OperatorSecrets, code: string): Promise<boolean> {
  try {
    return await useTotpCode(app.db, operator, code, app.secretKey);
  } catch (e) {
    if (!(e instanceof SecretKeyError)) throw e;
    app.log.error(
      { operator: operator.id, err: e.message },
      'operator sign-in refused: the TOTP secret cannot be read',
    );
    return false;
  }
}

/**
 * POST /admin/api/session. Counted as the console's log-ins are, before anything is checked (429 beyond the limits;
 * the daily per-email one spares addresses the operator signed in from before, so a stranger cannot lock them out).
 * A wrong email, password or code, and a disabled operator, all get the same 401, and an unknown email costs the
 * time of a wrong password. Until TOTP is enrolled the password alone opens a session that can only enrol. With
 * `admin.oidc.allow_password: false` operators sign in through the OpenID provider only: a 403 here. Each sign-in,
 * and each failed one with what failed (never the password or code tried), goes into the audit log: a right password
 * with a wrong code is what an owner looks for after a password leaked.
 */
export const signInOperator: Handler<'signInOperator'> = async ({ body, app, http }) => {
  if (app.oidc && !app.oidc.settings.allow_password) throw errors.passwordSignInOff(app.oidc.settings.label);
  const attempt = await app.operatorLimits.loginAttempt(body.email, http.remoteAddress, (address) =>
    knownOperatorAddress(app.db, body.email, address, KNOWN_ADDRESS_MS),
  );
  const operator = await findOperatorByEmail(app.db, body.email);
  // An operator made by OpenID Connect has no password (an empty hash): it costs the time of a wrong one.
  const check = await verifyPassword(body.password, operator?.passwordHash || null);
  const failed = async (reason: SignInFailure) => {
    await recordSignIn(app.db, { operator, email: body.email, address: http.remoteAddress, failed: reason });
    return errors.invalidOperatorCredentials(); // the caller is told nothing of which: the audit log says it
  };
  if (!operator) throw await failed('unknown_email');
  if (!check.ok) throw await failed('password');
  if (operator.disabled) throw await failed('disabled');
  if (operator.totpEnabled && !(await totpCodeOk(app, operator, body.code ?? ''))) throw await failed('code');
  await attempt.succeeded();
  await recordSignIn(app.db, { operator, email: operator.email, address: http.remoteAddress });
  await rememberOperatorAddress(app.db, operator.id, addressKey(http.remoteAddress));
  if (check.stale) await setOperatorPassword(app.db, operator.id, await hashPassword(body.password));
  const session = await createOperatorSession(app.db, operator.id, operator.totpEnabled, OPERATOR_SESSION_MS);
  return {
    body: operatorSessionView(publicOperator(operator), { ...session, secondFactor: operator.totpEnabled }),
    headers: { 'set-cookie': operatorCookie(session.id, http.secure), 'cache-control': 'no-store' },
  };
};
