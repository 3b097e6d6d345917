import { startTotp } from '../accounts/operators';
import { errors } from '../errors';
import type { Handler } from './types';

/** The name authenticator apps show the entry under. */
const ISSUER = 'Switchyard';

/**
 * POST /admin/api/session/totp: a new secret, answered once as its otpauth:// URI (no other answer carries it);
 * an operator who enrolled already must not be able to swap the second factor with a
 * stolen session, so that is a 409.
 */
export const startTotpEnrolment: Handler<'startTotpEnrolment'> = async ({ operator, app }) => {
  const uri = await startTotp(app.db, operator.operatorId, ISSUER, app.secretKey);
  if (!uri) throw errors.conflict('TOTP is enrolled already', 'totp_enrolled', null);
  return { body: { otpauth_uri: uri }, headers: { 'cache-control': 'no-store' } };
};
