import { EmailTaken, UnknownReferralCode, registerAccount } from '../accounts/accounts';
import { hashPassword, passwordProblem } from '../accounts/passwords';
import { createSession } from '../accounts/sessions';
import { AccountError } from '../accounts/accounts';
import { accountView, sessionCookie } from '../console/views';
import { ApiError, errors } from '../errors';
import type { Handler } from './types';

/** POST /console/api/register: a new account with starter (and referral) credits, logged in. */
export const register: Handler<'register'> = async ({ body, app, http, services }) => {
  const problem = passwordProblem(body.password, body.email);
  if (problem) throw new ApiError(400, 'invalid_request_error', problem, 'weak_password', 'password');
  await services.limits.registration(http.remoteAddress);
  let account;
  try {
    account = await registerAccount(app.db, {
      email: body.email,
      passwordHash: await hashPassword(body.password),
      referralCode: body.referral_code?.trim() || null,
      starterMicros: app.config.console.starter_credits_micros,
      referralMicros: app.config.console.referral_credits_micros,
    });
  } catch (e) {
    if (e instanceof EmailTaken) throw errors.conflict('An account with this email already exists', 'email_taken', 'email');
    if (e instanceof UnknownReferralCode) throw new ApiError(400, 'invalid_request_error', e.message, 'invalid_referral_code', 'referral_code');
    if (e instanceof AccountError) throw errors.invalidRequest(`Invalid value for 'email': ${e.message}`, 'email');
    throw e;
  }
  const ttl = app.config.console.session_ttl_ms;
  const { id, session } = await createSession(app.db, account.id, ttl);
  return {
    status: 201,
    body: { account: await accountView(app.db, account, http), csrf_token: session.csrfToken },
    headers: { 'set-cookie': sessionCookie(id, ttl, http.secure), 'cache-control': 'no-store' },
  };
};
