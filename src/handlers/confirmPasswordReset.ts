import { resetPassword } from '../services/signup';
import { ApiError, errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /console/api/password-reset/confirm: a reset link's token sets a new password and ends every session of the
 * account; the link reached the address, so it counts as confirmed too, and the failed log-ins of that email start
 * afresh (a stranger's guesses cannot keep the owner out past a reset). A weak password leaves the link working.
 */
export const confirmPasswordReset: Handler<'confirmPasswordReset'> = async ({ body, app }) => {
  const done = await resetPassword(app.db, body.token, body.password, app.config.console);
  if ('invalid' in done) throw errors.invalidToken();
  if ('problem' in done) throw new ApiError(400, 'invalid_request_error', done.problem, 'weak_password', 'password');
  await app.consoleLimits.mailboxProved(done.email);
  return { body: { password_reset: true, email: done.email } };
};
