import { overview } from '../services/overview';
import type { Handler } from './types';

/** GET /admin/api/overview: requests, spend and top-ups by window, spend by model and provider, each route's health. */
export const adminOverview: Handler<'adminOverview'> = async ({ app }) => ({
  body: await overview(app.db, app.config.models, app.gateway.router),
});
