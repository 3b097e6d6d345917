import { resetLinkWorks } from '../services/signup';
import { errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /console/api/password-reset/check: whether a reset link still works, without using it up, so the page can
 * offer a new link at once instead of after a password was typed.
 */
export const checkPasswordReset: Handler<'checkPasswordReset'> = async ({ body, app }) => {
  if (!(await resetLinkWorks(app.db, body.token))) throw errors.invalidToken();
  return { body: { valid: true } };
};
