import { formatUsd } from '../money';
import { RedemptionError, redeemCode as redeem } from '../billing/redemption';
import { ApiError, errors } from '../errors';
import type { Handler } from './types';

/** POST /console/api/topup/redeem: a code's amount onto the account (what it owes first), once (409 when it was used already). */
export const redeemCode: Handler<'redeemCode'> = async ({ session, body, app }) => {
  try {
    const r = await redeem(app.db, session.accountId, body.code);
    if (r.reactivated) app.keys.changed({ accountId: session.accountId }); // its debt paid: its keys work again everywhere
    return { body: { amount_usd: formatUsd(r.amountMicros), balance_usd: formatUsd(r.balanceMicros) } };
  } catch (e) {
    if (e instanceof RedemptionError && e.reason === 'redeemed')
      throw errors.conflict(e.message, 'code_redeemed', 'code');
    if (e instanceof RedemptionError)
      throw new ApiError(400, 'invalid_request_error', e.message, 'invalid_code', 'code');
    throw e;
  }
};
