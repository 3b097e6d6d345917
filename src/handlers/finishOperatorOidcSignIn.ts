import { errors } from '../errors';
import { OIDC_COOKIE } from '../services/oidc';
import { signInWithOidc } from '../services/oidcSignIn';
import { operatorCookie, readCookie } from '../services/views';
import type { Handler } from './types';

/**
 * GET /admin/api/session/oidc/callback: the provider's answer, checked for the browser that started the sign-in;
 * signed in, the same `sy_admin` cookie as a password sign-in sets, and on to the admin app.
 */
export const finishOperatorOidcSignIn: Handler<'finishOperatorOidcSignIn'> = async ({ app, http, query }) => {
  if (!app.oidc) throw errors.oidcNotConfigured();
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (typeof v === 'string') params.append(k, v);
  const { session } = await signInWithOidc(app, app.oidc, {
    cookie: readCookie(http.headers.cookie, OIDC_COOKIE),
    params,
    address: http.remoteAddress,
  });
  return {
    status: 302,
    body: null,
    headers: {
      location: '/admin/',
      'set-cookie': operatorCookie(session.id, http.secure),
      'cache-control': 'no-store',
    },
  };
};
