import { deleteOperatorSession } from '../accounts/operators';
import { clearOperatorCookie } from '../services/views';
import type { Handler } from './types';

/** DELETE /admin/api/session: the session is deleted on the server, the cookie cleared. */
export const signOutOperator: Handler<'signOutOperator'> = async ({ operator, app, http }) => {
  await deleteOperatorSession(app.db, operator.idHash);
  return { status: 204, body: null, headers: { 'set-cookie': clearOperatorCookie(http.secure) } };
};
