import type { UsageFilter } from '../db/queries/usage';
import { usageRecords } from '../db/queries/usage';
import { instantParam, usageCsv, usageRecordView, wantsCsv } from '../services/adminPages';
import { cursorParam, USAGE_CLASS_VIEWS } from '../services/views';
import type { Handler } from './types';

/**
 * GET /admin/api/usage: every account's usage records, newest first, filtered; as CSV, the whole filtered range,
 * streamed a batch of rows at a time (an export of a month is never in memory at once).
 */
export const adminListUsage: Handler<'adminListUsage'> = async ({ query, app, headers }) => {
  const filter: UsageFilter = {
    accountId: query.account_id,
    keyId: query.key_id,
    model: query.model || undefined,
    provider: query.provider || undefined,
    status: query.status === 'ok' || query.status === 'error' ? query.status : statusOf(query.status),
    from: instantParam(query.from, 'from'),
    to: instantParam(query.to, 'to'),
  };
  const cursor = cursorParam(query.cursor);
  if (wantsCsv(query.format, headers))
    return {
      binary: usageCsv(app.db, filter, cursor),
      contentType: 'text/csv; charset=utf-8',
      headers: { 'content-disposition': 'attachment; filename="usage.csv"' },
    };
  const limit = query.limit ?? 50;
  const rows = await usageRecords(app.db, filter, { limit: limit + 1, beforeId: cursor });
  return {
    body: {
      data: rows.slice(0, limit).map(usageRecordView),
      next_cursor: rows.length > limit ? String(rows[limit - 1].id) : null,
      classes: USAGE_CLASS_VIEWS,
    },
  };
};

const statusOf = (s: string | undefined) => (s ? Number(s) : undefined);
