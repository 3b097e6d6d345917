import { keysPage } from '../services/adminPages';
import { cursorParam } from '../services/views';
import type { Handler } from './types';

/** GET /admin/api/keys: every account's keys, found by their visible prefix (or the whole key), with their account. */
export const adminListKeys: Handler<'adminListKeys'> = async ({ query, app }) => ({
  body: await keysPage(app.db, {
    prefix: query.prefix || undefined,
    accountId: query.account_id,
    afterId: cursorParam(query.cursor),
    limit: query.limit ?? 50,
  }),
});
