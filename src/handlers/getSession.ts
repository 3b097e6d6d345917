import { getAccount } from '../accounts/accounts';
import { accountView } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** GET /console/api/session: who is logged in, and the CSRF token for state-changing calls. */
export const getSession: Handler<'getSession'> = async ({ session, app, http }) => {
  const account = await getAccount(app.db, session.accountId);
  if (!account) throw errors.notLoggedIn();
  return {
    body: { account: await accountView(app.db, account, http.origin), csrf_token: session.csrfToken },
    headers: { 'cache-control': 'no-store' },
  };
};
