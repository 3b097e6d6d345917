import { accountStatusView } from '../services/admin';
import type { Handler } from './types';

/** POST /admin/api/accounts/{id}/enable. */
export const adminEnableAccount: Handler<'adminEnableAccount'> = async ({ params, app }) => ({
  body: await accountStatusView(app, params.id, 'active'),
});
