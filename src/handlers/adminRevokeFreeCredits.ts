import { formatUsd } from '../money';
import { revokeFreeCredits } from '../services/farming';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /admin/api/accounts/{id}/revoke-free-credits: takes back the sign-up and referral credits not yet spent. */
export const adminRevokeFreeCredits: Handler<'adminRevokeFreeCredits'> = async ({ params, app }) => {
  const done = await revokeFreeCredits(app.db, params.id);
  if (!done) throw errors.accountNotFound(params.id);
  app.log.info({ account: params.id, micros: done.revoked_micros }, 'free credits revoked');
  return {
    body: {
      account_id: params.id,
      revoked_usd: formatUsd(done.revoked_micros),
      balance_usd: formatUsd(done.balance_micros),
    },
  };
};
