import { usageRecords, usageTotals } from '../db/queries/usage';
import { formatUsd } from '../money';
import { USAGE_CLASS_VIEWS, cursorParam, timeParam, usageCountsView } from '../services/views';
import type { Handler } from './types';

/**
 * GET /console/api/usage: the account's usage records, newest first, with per-model totals of the filtered range and
 * the usage classes they count.
 */
export const listUsage: Handler<'listUsage'> = async ({ session, query, app }) => {
  const filter = {
    accountId: session.accountId,
    keyId: query.key_id,
    from: timeParam(query.from, 'from'),
    to: timeParam(query.to, 'to'),
  };
  const limit = query.limit ?? 50;
  const rows = await usageRecords(app.db, filter, { limit: limit + 1, beforeId: cursorParam(query.cursor) });
  const totals = await usageTotals(app.db, filter);
  return {
    body: {
      data: rows.slice(0, limit).map((r) => ({
        request_id: r.request_id,
        key_id: r.key_id,
        model: r.model,
        status: r.status,
        ...usageCountsView(r),
        counted: r.counted as never,
        cost_usd: formatUsd(r.cost_micros),
        latency_ms: r.latency_ms,
        created_at: new Date(r.created_at).toISOString(),
      })),
      next_cursor: rows.length > limit ? String(rows[limit - 1].id) : null,
      totals: totals.map((t) => ({
        model: t.model,
        requests: t.requests,
        ...usageCountsView(t),
        cost_usd: formatUsd(t.cost_micros),
      })),
      classes: USAGE_CLASS_VIEWS,
    },
  };
};
