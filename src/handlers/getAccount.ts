import { getAccount as findAccount } from '../accounts/accounts';
import { accountView } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** GET /console/api/account: balance, referral code and link, totals. */
export const getAccount: Handler<'getAccount'> = async ({ session, app, http }) => {
  const account = await findAccount(app.db, session.accountId);
  if (!account) throw errors.notLoggedIn();
  return { body: await accountView(app.db, account, http.origin) };
};
