import { deleteKey } from '../accounts/keys';
import { errors } from '../errors';
import type { Handler } from './types';

/** DELETE /console/api/keys/{id}: /v1 refuses the key from its next request on; another account's key is a 404. */
export const deleteConsoleKey: Handler<'deleteConsoleKey'> = async ({ session, params, app }) => {
  if (!(await deleteKey(app.db, params.id, session.accountId))) throw errors.keyNotFound(params.id);
  app.keys.changed({ keyId: params.id });
  return { status: 204, body: null };
};
