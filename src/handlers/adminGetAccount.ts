import { accountDetail } from '../services/adminPages';
import type { Handler } from './types';

/** GET /admin/api/accounts/{id}: the account, its keys, latest ledger rows, usage and console sign-ins. */
export const adminGetAccount: Handler<'adminGetAccount'> = async ({ params, app }) => ({
  body: await accountDetail(app.db, params.id),
});
