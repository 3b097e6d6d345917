import { formatUsd } from '../money';
import type { Handler } from './types';

/**
 * GET /console/api/config: what the console's pages need before log-in — the CAPTCHA's provider and public key, the
 * amounts the pages promise (so they never state a number the configuration does not pay), and the operator's words
 * on where redemption codes come from.
 */
export const getConsoleConfig: Handler<'getConsoleConfig'> = async ({ app }) => {
  const c = app.config.console;
  return {
    body: {
      captcha: c.captcha ? { provider: c.captcha.provider, site_key: c.captcha.site_key } : null,
      starter_credits_usd: formatUsd(c.starter_credits_micros),
      referral_credits_usd: formatUsd(c.referral_credits_micros),
      topup_note: c.topup_note,
    },
  };
};
