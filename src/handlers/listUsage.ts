import { formatUsd } from '../billing/money';
import { cursorParam, timeParam } from '../console/views';
import type { Handler } from './types';

/** GET /console/api/usage: the account's usage records, newest first, with per-model totals of the filtered range. */
export const listUsage: Handler<'listUsage'> = async ({ session, query, app }) => {
  const from = timeParam(query.from, 'from');
  const to = timeParam(query.to, 'to');
  const cursor = cursorParam(query.cursor);
  const limit = query.limit ?? 50;
  const filtered = () => {
    const q = app.db('usage_records').where('account_id', session.accountId);
    if (query.key_id !== undefined) q.andWhere('key_id', query.key_id);
    if (from !== undefined) q.andWhere('created_at', '>=', from);
    if (to !== undefined) q.andWhere('created_at', '<', to);
    return q;
  };
  const page = filtered().orderBy('id', 'desc').limit(limit + 1);
  if (cursor !== undefined) page.andWhere('id', '<', cursor);
  const rows = await page;
  const totals = (await filtered()
    .select('model')
    .count({ requests: '*' })
    .sum({ prompt_tokens: 'prompt_tokens', completion_tokens: 'completion_tokens', cost: 'cost_micros' })
    .groupBy('model')
    .orderBy('model')) as Record<string, unknown>[];
  return {
    body: {
      data: rows.slice(0, limit).map((r) => ({
        request_id: String(r.request_id),
        key_id: Number(r.key_id),
        model: String(r.model),
        status: Number(r.status),
        prompt_tokens: Number(r.prompt_tokens),
        completion_tokens: Number(r.completion_tokens),
        counted: r.counted,
        cost_usd: formatUsd(Number(r.cost_micros)),
        latency_ms: r.latency_ms === null ? null : Number(r.latency_ms),
        created_at: new Date(Number(r.created_at)).toISOString(),
      })),
      next_cursor: rows.length > limit ? String(rows[limit - 1].id) : null,
      totals: totals.map((t) => ({
        model: String(t.model),
        requests: Number(t.requests),
        prompt_tokens: Number(t.prompt_tokens),
        completion_tokens: Number(t.completion_tokens),
        cost_usd: formatUsd(Number(t.cost)),
      })),
    },
  };
};
