import { AccountError, setAccountStatus } from '../accounts/accounts';
import { adminAccountView } from '../console/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /admin/api/accounts/{id}/disable: its keys are refused from their next request on, its sessions end. */
export const adminDisableAccount: Handler<'adminDisableAccount'> = async ({ params, app }) => {
  try {
    return { body: adminAccountView(await setAccountStatus(app.db, params.id, 'disabled')) };
  } catch (e) {
    if (e instanceof AccountError) throw errors.accountNotFound(params.id);
    throw e;
  }
};
