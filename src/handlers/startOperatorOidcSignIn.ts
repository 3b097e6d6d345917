import { errors } from '../errors';
import { OIDC_CALLBACK_PATH, oidcCookie } from '../services/oidc';
import type { Handler } from './types';

/**
 * GET /admin/api/session/oidc: to the OpenID provider (302), the browser marked with the `sy_oidc` cookie of the
 * sign-in it started. The provider sends it back to `redirect_url`, by default this gateway's callback at its
 * public URL (or, without one, at the origin the browser reached: the provider accepts only registered URIs).
 */
export const startOperatorOidcSignIn: Handler<'startOperatorOidcSignIn'> = async ({ app, http }) => {
  if (!app.oidc) throw errors.oidcNotConfigured();
  const redirectUri = app.oidc.settings.redirect_url ?? `${http.origin}${OIDC_CALLBACK_PATH}`;
  const { location, cookie } = await app.oidc.start(app.db, redirectUri);
  return {
    status: 302,
    body: null,
    headers: { location, 'set-cookie': oidcCookie(cookie, http.secure), 'cache-control': 'no-store' },
  };
};
