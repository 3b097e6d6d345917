import { auditCsv, listAudit } from '../services/audit';
import { cursorParam } from '../services/views';
import type { Handler } from './types';

/** GET /admin/api/audit: the audit log, newest first, paged; as CSV with `format=csv`. */
export const adminListAudit: Handler<'adminListAudit'> = async ({ query, app }) => {
  const limit = query.limit ?? 50;
  const rows = await listAudit(app.db, {
    limit: limit + 1,
    beforeId: cursorParam(query.cursor),
    action: query.action || undefined,
    target: query.target || undefined,
  });
  const data = rows.slice(0, limit);
  if (query.format === 'csv') return { body: auditCsv(data), contentType: 'text/csv; charset=utf-8' };
  return { body: { data, next_cursor: rows.length > limit ? String(rows[limit - 1].id) : null } };
};
