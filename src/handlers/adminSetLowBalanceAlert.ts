import { AccountError, setLowBalance } from '../accounts/accounts';
import { formatUsd } from '../money';
import { usdParam } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** PUT /admin/api/accounts/{id}/alert: an account's low-balance alert threshold (null: off). */
export const adminSetLowBalanceAlert: Handler<'adminSetLowBalanceAlert'> = async ({ params, body, app }) => {
  try {
    const a = await setLowBalance(
      app.db,
      params.id,
      body.low_balance_usd === undefined || body.low_balance_usd === null
        ? null
        : usdParam(body.low_balance_usd, 'low_balance_usd'),
    );
    return {
      body: {
        account_id: a.id,
        low_balance_usd: a.low_balance_micros === null ? null : formatUsd(a.low_balance_micros),
      },
    };
  } catch (e) {
    if (e instanceof AccountError) throw errors.accountNotFound(params.id);
    throw e;
  }
};
