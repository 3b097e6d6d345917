import type { Handler } from './types';

/** GET /console/api/config: what the console's pages need before log-in (the CAPTCHA's provider and public key). */
export const getConsoleConfig: Handler<'getConsoleConfig'> = async ({ app }) => {
  const c = app.config.console.captcha;
  return { body: { captcha: c ? { provider: c.provider, site_key: c.site_key } : null } };
};
