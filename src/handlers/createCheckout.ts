import { getAccount } from '../accounts/accounts';
import { formatUsd } from '../money';
import { MICROS_PER_CENT } from '../billing/stripe';
import { usdParam } from '../services/views';
import { ApiError, errors } from '../errors';
import type { Handler } from './types';

/** POST /console/api/topup/checkout: a Stripe Checkout Session for the amount; the webhook credits it once paid. */
export const createCheckout: Handler<'createCheckout'> = async ({ session, body, app, http }) => {
  if (!app.cards) throw errors.cardPaymentsOff();
  const micros = usdParam(body.amount_usd, 'amount_usd');
  const { topup_min_micros: min, topup_max_micros: max } = app.config.console;
  if (micros % MICROS_PER_CENT)
    throw errors.invalidRequest("Invalid value for 'amount_usd': must be whole cents", 'amount_usd');
  if (micros < min || micros > max) {
    throw errors.invalidRequest(
      `Invalid value for 'amount_usd': must be between ${formatUsd(min)} and ${formatUsd(max)} USD`,
      'amount_usd',
    );
  }
  const account = await getAccount(app.db, session.accountId);
  if (!account) throw errors.notLoggedIn();
  try {
    const checkout = await app.cards.createCheckout({
      accountId: account.id,
      email: account.email,
      cents: micros / MICROS_PER_CENT,
      returnUrl: `${http.origin}/console/topup`,
    });
    return { body: checkout, headers: { 'cache-control': 'no-store' } };
  } catch (e) {
    if (e instanceof ApiError) throw e;
    app.log.error({ err: (e as Error).message, type: (e as { type?: string }).type }, 'stripe checkout session failed');
    throw errors.paymentProviderUnavailable();
  }
};
