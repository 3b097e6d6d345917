import { confirmAddress } from '../services/signup';
import { errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /console/api/verify-email: the mailed link's token confirms the address and pays the sign-up credits; a link
 * opened again on a confirmed address says so instead of "invalid".
 */
export const verifyEmail: Handler<'verifyEmail'> = async ({ body, app }) => {
  const done = await confirmAddress(app.db, body.token, app.config.console);
  if (done === null) throw errors.invalidToken();
  return { body: { email_verified: true, already_verified: done.already } };
};
