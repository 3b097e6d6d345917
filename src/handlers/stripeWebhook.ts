import { SignatureError } from '../billing/stripe';
import { ApiError, errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /console/api/stripe/webhook. The signature is checked over the raw bytes of the body (the server keeps
 * them for this route; see src/server.ts); a paid Checkout Session is credited once, whatever arrives again.
 */
export const stripeWebhook: Handler<'stripeWebhook'> = async ({ app, http }) => {
  if (!app.cards) throw errors.cardPaymentsOff();
  if (!http.rawBody) throw errors.internal();
  try {
    const { statusChanged, ...result } = await app.cards.handleWebhook(http.rawBody, http.headers['stripe-signature']);
    if (statusChanged !== undefined) app.keys.changed({ accountId: statusChanged }); // suspended or back: every process's key cache and leases
    return { body: result };
  } catch (e) {
    if (e instanceof SignatureError) {
      app.log.warn({ err: e.message }, 'stripe webhook with a bad signature');
      throw new ApiError(400, 'invalid_request_error', e.message, 'invalid_signature', 'stripe-signature');
    }
    throw e;
  }
};
