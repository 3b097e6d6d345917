import { getAccount, setPasswordHash, verifyEmail } from '../accounts/accounts';
import { consumeToken } from '../accounts/emailTokens';
import { hashPassword, passwordProblem } from '../accounts/passwords';
import { signupCredits } from '../services/signup';
import { ApiError, errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /console/api/password-reset/confirm: a reset link's token sets a new password and ends every session of the
 * account; the link reached the address, so it counts as confirmed too.
 */
export const confirmPasswordReset: Handler<'confirmPasswordReset'> = async ({ body, app }) => {
  const accountId = await consumeToken(app.db, body.token, 'reset');
  if (accountId === null) throw errors.invalidToken();
  const account = (await getAccount(app.db, accountId))!;
  const problem = passwordProblem(body.password, account.email);
  if (problem) throw new ApiError(400, 'invalid_request_error', problem, 'weak_password', 'password');
  await setPasswordHash(app.db, accountId, await hashPassword(body.password));
  await app.db('sessions').where('account_id', accountId).del();
  await verifyEmail(app.db, accountId, signupCredits(app.config.console));
  return { body: { password_reset: true } };
};
