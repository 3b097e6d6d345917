import { OIDC_START_PATH } from '../services/oidc';
import type { Handler } from './types';

/** GET /admin/api/session/methods: what the sign-in page offers (a password form, a "Sign in with" button). */
export const getOperatorSignInMethods: Handler<'getOperatorSignInMethods'> = async ({ app }) => ({
  body: {
    password: app.oidc?.settings.allow_password ?? true,
    oidc: app.oidc ? { label: app.oidc.settings.label, url: OIDC_START_PATH } : null,
  },
});
