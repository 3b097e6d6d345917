import { confirmAddress } from '../services/signup';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /console/api/verify-email: the mailed link's token confirms the address and pays the sign-up credits. */
export const verifyEmail: Handler<'verifyEmail'> = async ({ body, app }) => {
  const account = await confirmAddress(app.db, body.token, app.config.console);
  if (account === null) throw errors.invalidToken();
  return { body: { email_verified: true } };
};
