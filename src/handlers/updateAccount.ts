import { getAccount, setLowBalance } from '../accounts/accounts';
import { accountView, usdParam } from '../services/views';
import type { Handler } from './types';

/** PATCH /console/api/account: the low-balance alert threshold (null: off). */
export const updateAccount: Handler<'updateAccount'> = async ({ session, body, app, http }) => {
  let account;
  if (body.low_balance_usd !== undefined) {
    account = await setLowBalance(
      app.db,
      session.accountId,
      body.low_balance_usd === null ? null : usdParam(body.low_balance_usd, 'low_balance_usd'),
    );
  }
  return { body: await accountView(app.db, account ?? (await getAccount(app.db, session.accountId))!, http.origin) };
};
