import { confirmTotp, getOperator, markSecondFactor, totpStarted } from '../accounts/operators';
import { errors } from '../errors';
import { operatorSessionView } from '../services/views';
import type { Handler } from './types';

/**
 * POST /admin/api/session/totp/confirm: a code of the new secret proves the app holds it; the second factor is on,
 * and this session (which proved it just now) may do what the role may.
 */
export const confirmTotpEnrolment: Handler<'confirmTotpEnrolment'> = async ({ operator, app, body }) => {
  if (operator.operator.totpEnabled) throw errors.conflict('TOTP is enrolled already', 'totp_enrolled', null);
  if (!(await confirmTotp(app.db, operator.operatorId, body.code))) {
    if (!(await totpStarted(app.db, operator.operatorId)))
      throw errors.conflict('No TOTP enrolment was started', 'totp_not_started', null);
    throw errors.invalidCode();
  }
  await markSecondFactor(app.db, operator.idHash);
  const now = (await getOperator(app.db, operator.operatorId))!;
  return {
    body: operatorSessionView(now, { csrfToken: operator.csrfToken, secondFactor: true }),
    headers: { 'cache-control': 'no-store' },
  };
};
