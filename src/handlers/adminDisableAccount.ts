import { accountStatusView } from '../services/admin';
import type { Handler } from './types';

/** POST /admin/api/accounts/{id}/disable: its keys are refused from their next request on, its sessions end. */
export const adminDisableAccount: Handler<'adminDisableAccount'> = async ({ params, app }) => ({
  body: await accountStatusView(app, params.id, 'disabled'),
});
