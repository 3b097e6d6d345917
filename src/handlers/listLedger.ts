import { formatUsd } from '../money';
import { cursorParam, timeParam } from '../services/views';
import type { Handler } from './types';

/** GET /console/api/ledger: every change of the account's balance, newest first. */
export const listLedger: Handler<'listLedger'> = async ({ session, query, app }) => {
  const from = timeParam(query.from, 'from');
  const to = timeParam(query.to, 'to');
  const cursor = cursorParam(query.cursor);
  const limit = query.limit ?? 50;
  const q = app
    .db('ledger')
    .where('account_id', session.accountId)
    .orderBy('id', 'desc')
    .limit(limit + 1);
  if (from !== undefined) q.andWhere('created_at', '>=', from);
  if (to !== undefined) q.andWhere('created_at', '<', to);
  if (cursor !== undefined) q.andWhere('id', '<', cursor);
  const rows = await q;
  return {
    body: {
      data: rows.slice(0, limit).map((r) => ({
        id: Number(r.id),
        kind: r.kind,
        amount_usd: formatUsd(Number(r.amount_micros)),
        balance_after_usd: formatUsd(Number(r.balance_after)),
        ref: r.ref ?? null,
        model: r.model ?? null,
        created_at: new Date(Number(r.created_at)).toISOString(),
      })),
      next_cursor: rows.length > limit ? String(rows[limit - 1].id) : null,
    },
  };
};
