import type { components } from '../../generated/openapi';
import { refusalRows, refusalTotals } from '../db/queries/refusals';
import { timeParam } from '../services/views';
import type { Handler } from './types';

/** What the table holds is what refusalReason (billing/refusals.ts) wrote: one of the contract's reasons. */
type Reason = components['schemas']['RefusalReason'];

/**
 * GET /console/api/usage/refused: the account's refused calls (401, 429 of its known keys) per minute or per UTC day,
 * newest first, with totals per status and reason over the filtered range.
 */
export const listRefusedCalls: Handler<'listRefusedCalls'> = async ({ session, query, app }) => {
  const filter = {
    accountId: session.accountId,
    keyId: query.key_id,
    from: timeParam(query.from, 'from'),
    to: timeParam(query.to, 'to'),
  };
  const rows = await refusalRows(app.db, filter, query.by ?? 'minute', query.limit ?? 50);
  const totals = await refusalTotals(app.db, filter);
  return {
    body: {
      data: rows.map((r) => ({ ...r, at: new Date(r.at).toISOString(), reason: r.reason as Reason })),
      totals: totals.map((t) => ({ ...t, reason: t.reason as Reason })),
    },
  };
};
