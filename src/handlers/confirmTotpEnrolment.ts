import { confirmTotp, getOperator, markSecondFactor, totpStarted } from '../accounts/operators';
import { errors } from '../errors';
import { operatorActor, recordAudit } from '../services/audit';
import { operatorSessionView, operatorView } from '../services/views';
import { SecretKeyError } from '../secrets';
import type { App } from '../services/app';
import type { Handler } from './types';

/** The code confirms the new secret; one sealed under another SWITCHYARD_SECRET_KEY (changed since) is logged, refused. */
async function confirmed(app: App, operatorId: number, code: string): Promise<boolean> {
  try {
    return await confirmTotp(app.db, operatorId, code, app.secretKey);
  } catch (e) {
    if (!(e instanceof SecretKeyError)) throw e;
    app.log.error({ operator: operatorId, err: e.message }, 'TOTP enrolment refused: the new secret cannot be read');
    return false;
  }
}

/**
 * POST /admin/api/session/totp/confirm: a code of the new secret proves the app holds it; the second factor is on,
 * and this session (which proved it just now) may do what the role may. Recorded in the audit log: who enrolled a
 * second factor, when and from where, is what an owner looks for after a password leaked.
 */
export const confirmTotpEnrolment: Handler<'confirmTotpEnrolment'> = async ({ operator, app, body, http }) => {
  if (operator.operator.totpEnabled) throw errors.conflict('TOTP is enrolled already', 'totp_enrolled', null);
  if (!(await confirmed(app, operator.operatorId, body.code))) {
    if (!(await totpStarted(app.db, operator.operatorId)))
      throw errors.conflict('No TOTP enrolment was started', 'totp_not_started', null);
    throw errors.invalidCode();
  }
  await markSecondFactor(app.db, operator.idHash);
  const now = (await getOperator(app.db, operator.operatorId))!;
  await recordAudit(app.db, {
    actor: operatorActor(now),
    address: http.remoteAddress,
    action: 'confirmTotpEnrolment',
    target: `operator:${now.id}`,
    before: operatorView(operator.operator),
    after: operatorView(now),
  });
  return {
    body: operatorSessionView(now, { csrfToken: operator.csrfToken, secondFactor: true }),
    headers: { 'cache-control': 'no-store' },
  };
};
