import { getAccount } from '../accounts/accounts';
import { mailVerification } from '../services/signup';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /console/api/verify-email/resend: a new confirmation link to the logged-in account's address. */
export const resendVerification: Handler<'resendVerification'> = async ({ session, app, http }) => {
  const account = (await getAccount(app.db, session.accountId))!;
  if (account.verified_at !== null)
    throw errors.conflict('This address is confirmed already', 'already_verified', null);
  await app.consoleLimits.mail(`verify:${account.id}`);
  await mailVerification(app.db, app.mailer, account, http.origin);
  return { status: 202, body: { sent: true } };
};
