import { listAccounts } from '../accounts/accounts';
import { adminAccountView, cursorParam } from '../services/views';
import type { Handler } from './types';

/** GET /admin/api/accounts: accounts in id order, paged, optionally filtered by part of the email. */
export const adminListAccounts: Handler<'adminListAccounts'> = async ({ query, app }) => {
  const limit = query.limit ?? 50;
  const rows = await listAccounts(app.db, {
    limit: limit + 1,
    afterId: cursorParam(query.cursor),
    email: query.email || undefined,
  });
  return {
    body: {
      data: rows.slice(0, limit).map(adminAccountView),
      next_cursor: rows.length > limit ? String(rows[limit - 1].id) : null,
    },
  };
};
