import {
  endOtherOperatorSessions,
  findOperatorByEmail,
  knownOperatorAddress,
  setOperatorPassword,
} from '../accounts/operators';
import { hashPassword, passwordProblem, verifyPassword } from '../accounts/passwords';
import { KNOWN_ADDRESS_MS } from '../accounts/sessions';
import { errors } from '../errors';
import { operatorActor, recordAudit } from '../services/audit';
import { operatorView } from '../services/views';
import type { Handler } from './types';

/**
 * POST /admin/api/session/password: the operator's own password, with the current one. A wrong current password
 * counts as a failed sign-in (a stolen session cannot guess it faster than a sign-in could). The new one must pass
 * the rules `operators create` applies; every other session of the operator ends. Audited, without any password.
 */
export const changeOperatorPassword: Handler<'changeOperatorPassword'> = async ({ operator, body, app, http }) => {
  const me = operator.operator;
  const attempt = await app.operatorLimits.loginAttempt(me.email, http.remoteAddress, (address) =>
    knownOperatorAddress(app.db, me.email, address, KNOWN_ADDRESS_MS),
  );
  const secrets = await findOperatorByEmail(app.db, me.email);
  if (!secrets || !(await verifyPassword(body.current_password, secrets.passwordHash)).ok)
    throw errors.invalidRequest('The current password is wrong', 'current_password', 'wrong_password');
  await attempt.succeeded();
  const weak = await passwordProblem(body.new_password, me.email);
  if (weak) throw errors.invalidRequest(weak, 'new_password', 'weak_password');
  await setOperatorPassword(app.db, me.id, await hashPassword(body.new_password));
  await endOtherOperatorSessions(app.db, me.id, operator.idHash);
  await recordAudit(app.db, {
    actor: operatorActor(me),
    address: http.remoteAddress,
    action: 'changeOperatorPassword',
    target: `operator:${me.id}`,
    before: operatorView(me),
    after: { ...operatorView(me), other_sessions: 'ended' },
  });
  return { status: 204, body: null, headers: { 'cache-control': 'no-store' } };
};
