import { startTotp } from '../accounts/operators';
import { errors } from '../errors';
import type { Handler } from './types';

/** The name authenticator apps show the entry under. */
const ISSUER = 'Switchyard';

/**
 * POST /admin/api/session/totp: a new secret, answered once as its otpauth:// URI and as a QR code of it (no other
 * answer carries either); an operator who enrolled already must not be able to swap the second factor with a
 * stolen session, so that is a 409. The QR code is drawn here, as SVG, so that the page loads no QR library and
 * the secret never leaves the gateway for a drawing service.
 */
export const startTotpEnrolment: Handler<'startTotpEnrolment'> = async ({ operator, app }) => {
  const uri = await startTotp(app.db, operator.operatorId, ISSUER, app.secretKey);
  if (!uri) throw errors.conflict('TOTP is enrolled already', 'totp_enrolled', null);
  // qrcode is loaded here, at the first enrolment, not at start-up: most gateways draw a handful of codes ever.
  const { toString: qrCode } = require('qrcode') as typeof import('qrcode');
  const svg = await qrCode(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return { body: { otpauth_uri: uri, qr_svg: svg }, headers: { 'cache-control': 'no-store' } };
};
