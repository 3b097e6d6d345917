/**
 * The optional CAPTCHA on registration (Cloudflare Turnstile or hCaptcha): the console's widget gives the browser a
 * token, the server checks it with the provider's siteverify (form-encoded secret, response and the client's
 * address; the answer's `success`), as both document. Off unless `console.captcha` is set.
 */
import type { CaptchaConfig } from '../config';
import { ApiError } from '../errors';

const refused = (message: string, code: string) =>
  new ApiError(400, 'invalid_request_error', message, code, 'captcha_token');

export async function checkCaptcha(
  config: CaptchaConfig | null,
  token: string | null | undefined,
  remoteAddress: string,
): Promise<void> {
  if (!config) return;
  if (!token) throw refused('Solve the CAPTCHA to register', 'captcha_required');
  let ok = false;
  try {
    const res = await fetch(config.verify_url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ secret: config.secret, response: token, remoteip: remoteAddress }),
      signal: AbortSignal.timeout(5_000),
    });
    ok = res.ok && ((await res.json()) as { success?: unknown }).success === true;
  } catch {
    throw refused('The CAPTCHA could not be checked; try again', 'captcha_unavailable');
  }
  if (!ok) throw refused('The CAPTCHA was not solved; try again', 'captcha_failed');
}
