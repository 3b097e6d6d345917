import { findAccountByEmail } from '../accounts/accounts';
import { mailPasswordReset } from '../services/signup';
import type { Handler } from './types';

/** POST /console/api/password-reset: the same answer whether or not the address has an account. */
export const requestPasswordReset: Handler<'requestPasswordReset'> = async ({ body, app, http }) => {
  await app.consoleLimits.mail(`reset:${body.email.trim().toLowerCase()}`);
  const account = await findAccountByEmail(app.db, body.email);
  if (account && account.status === 'active') {
    await mailPasswordReset(app.db, app.mailer, account, http.origin).catch((e) =>
      app.log.error({ err: (e as Error).message, account: account.id }, 'could not mail a password-reset link'),
    );
  }
  return { status: 202, body: { sent: true } };
};
