import { DisposableEmail, EmailTaken, UnknownReferralCode, registerAccount } from '../accounts/accounts';
import { hashPassword, passwordProblem } from '../accounts/passwords';
import { createSession, rememberLoginAddress } from '../accounts/sessions';
import { AccountError } from '../accounts/accounts';
import { addressKey } from '../services/consoleLimits';
import { checkCaptcha } from '../services/captcha';
import { mailVerification } from '../services/signup';
import { accountView, sessionCookie } from '../services/views';
import { ApiError, errors } from '../errors';
import type { Handler } from './types';

/** POST /console/api/register: a new account, logged in; the confirmation link is mailed (credits come with it). */
export const register: Handler<'register'> = async ({ body, app, http }) => {
  const problem = await passwordProblem(body.password, body.email);
  if (problem) throw new ApiError(400, 'invalid_request_error', problem, 'weak_password', 'password');
  await app.consoleLimits.registration(http.remoteAddress);
  await checkCaptcha(app.config.console.captcha, body.captcha_token, http.remoteAddress);
  let account;
  try {
    account = await registerAccount(app.db, {
      email: body.email,
      passwordHash: await hashPassword(body.password),
      referralCode: body.referral_code?.trim() || null,
      refusedDomains: app.config.console.disposable_domains,
      registeredFrom: addressKey(http.remoteAddress),
    });
  } catch (e) {
    if (e instanceof EmailTaken)
      throw errors.conflict('An account with this email already exists', 'email_taken', 'email');
    if (e instanceof DisposableEmail)
      throw new ApiError(
        400,
        'invalid_request_error',
        `Invalid value for 'email': ${e.message}; use a permanent address`,
        'disposable_email',
        'email',
      );
    if (e instanceof UnknownReferralCode)
      throw new ApiError(400, 'invalid_request_error', e.message, 'invalid_referral_code', 'referral_code');
    if (e instanceof AccountError) throw errors.invalidRequest(`Invalid value for 'email': ${e.message}`, 'email');
    throw e;
  }
  await mailVerification(app.db, app.mailer, account, http.origin).catch((e) =>
    app.log.error(
      { err: (e as Error).message, account: account.id },
      'could not mail the confirmation link; the console can send it again',
    ),
  );
  await rememberLoginAddress(app.db, account.id, addressKey(http.remoteAddress));
  const ttl = app.config.console.session_ttl_ms;
  const { id, session } = await createSession(app.db, account.id, ttl);
  return {
    status: 201,
    body: { account: await accountView(app.db, account, http.origin), csrf_token: session.csrfToken },
    headers: { 'set-cookie': sessionCookie(id, ttl, http.secure), 'cache-control': 'no-store' },
  };
};
