import { deleteSession } from '../accounts/sessions';
import { clearSessionCookie } from '../services/views';
import type { Handler } from './types';

/** POST /console/api/logout: the session is deleted on the server, the cookie cleared. */
export const logout: Handler<'logout'> = async ({ session, app, http }) => {
  await deleteSession(app.db, session.idHash);
  return { status: 204, body: null, headers: { 'set-cookie': clearSessionCookie(http.secure) } };
};
