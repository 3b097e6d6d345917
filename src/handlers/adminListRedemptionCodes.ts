import { listCodes } from '../billing/redemption';
import { codesCsv, codeView, wantsCsv } from '../services/adminPages';
import { cursorParam } from '../services/views';
import type { Handler } from './types';

/** GET /admin/api/redemption-codes: codes newest first, by batch and status, with who redeemed them; CSV on request. */
export const adminListRedemptionCodes: Handler<'adminListRedemptionCodes'> = async ({ query, app, headers }) => {
  const limit = query.limit ?? 50;
  const rows = await listCodes(app.db, {
    limit: limit + 1,
    beforeId: cursorParam(query.cursor),
    batch: query.batch,
    status: query.status,
  });
  const data = rows.slice(0, limit).map(codeView);
  if (wantsCsv(query.format, headers)) return { body: codesCsv(data), contentType: 'text/csv; charset=utf-8' };
  return { body: { data, next_cursor: rows.length > limit ? String(rows[limit - 1].id) : null } };
};
