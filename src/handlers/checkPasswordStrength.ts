import { MIN_SCORE, passwordProblem, passwordStrength } from '../accounts/passwords';
import type { Handler } from './types';

/**
 * POST /console/api/password-strength: the server's own estimate, for the pages to show as the user types (the same
 * one registration applies, so the meter never says "strong" for a password the server then refuses). Limited per
 * client address: each check costs up to ~45 ms of CPU.
 */
export const checkPasswordStrength: Handler<'checkPasswordStrength'> = async ({ body, app, http }) => {
  await app.consoleLimits.strengthCheck(http.remoteAddress);
  const email = body.email ?? '';
  const s = await passwordStrength(body.password, email);
  const ok = s.score >= MIN_SCORE && (await passwordProblem(body.password, email)) === null;
  return { body: { score: s.score, ok, warning: s.warning || null, suggestions: s.suggestions } };
};
