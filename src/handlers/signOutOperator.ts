import { deleteOperatorSession } from '../accounts/operators';
import { operatorActor, recordAudit } from '../services/audit';
import { clearOperatorCookie } from '../services/views';
import type { Handler } from './types';

/** DELETE /admin/api/session: the session is deleted on the server, the cookie cleared; recorded in the audit log. */
export const signOutOperator: Handler<'signOutOperator'> = async ({ operator, app, http }) => {
  await deleteOperatorSession(app.db, operator.idHash);
  await recordAudit(app.db, {
    actor: operatorActor(operator.operator),
    address: http.remoteAddress,
    action: 'signOutOperator',
    target: `operator:${operator.operatorId}`,
    before: null,
    after: null,
  });
  return { status: 204, body: null, headers: { 'set-cookie': clearOperatorCookie(http.secure) } };
};
