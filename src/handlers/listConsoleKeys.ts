import { listKeys } from '../accounts/keys';
import { keyView } from '../services/views';
import type { Handler } from './types';

/** GET /console/api/keys: the account's keys, oldest first. */
export const listConsoleKeys: Handler<'listConsoleKeys'> = async ({ session, app }) => ({
  body: { data: (await listKeys(app.db, session.accountId)).map(keyView) },
});
