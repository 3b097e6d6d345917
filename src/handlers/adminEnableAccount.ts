import { AccountError, setAccountStatus } from '../accounts/accounts';
import { adminAccountView } from '../console/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /admin/api/accounts/{id}/enable. */
export const adminEnableAccount: Handler<'adminEnableAccount'> = async ({ params, app }) => {
  try {
    return { body: adminAccountView(await setAccountStatus(app.db, params.id, 'active')) };
  } catch (e) {
    if (e instanceof AccountError) throw errors.accountNotFound(params.id);
    throw e;
  }
};
