import { getAccount } from '../accounts/accounts';
import { mailVerification } from '../services/signup';
import { errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /admin/api/accounts/{id}/resend-confirmation: a new confirmation link to an unconfirmed account, within the
 * console's limit per account (so neither side can flood the address). The link points at the console's origin.
 */
export const adminResendConfirmation: Handler<'adminResendConfirmation'> = async ({ params, app, http }) => {
  const account = await getAccount(app.db, params.id);
  if (!account) throw errors.accountNotFound(params.id);
  if (account.verified_at !== null)
    throw errors.conflict('This address is confirmed already', 'already_verified', null);
  await app.consoleLimits.mail(`verify:${account.id}`);
  await mailVerification(app.db, app.mailer, account, app.config.console.public_url ?? http.origin);
  return { status: 202, body: { sent: true } };
};
