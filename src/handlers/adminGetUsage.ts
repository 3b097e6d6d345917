import { usageRecord } from '../db/queries/usage';
import { receipt } from '../services/adminPages';
import { errors } from '../errors';
import type { Handler } from './types';

/** GET /admin/api/usage/{id}: a request's receipt — its record, how it was counted, its hold, its charge, its ledger rows. */
export const adminGetUsage: Handler<'adminGetUsage'> = async ({ params, app }) => {
  const record = await usageRecord(app.db, params.id);
  if (!record) {
    // A receipt of a request older than the retention is gone with its record (the rollups keep only sums).
    const days = app.config.usage.retention_days;
    const kept = days > 0 ? ` (usage records are kept ${days} days: usage.retention_days)` : '';
    throw errors.notFoundResource(`No usage record of request ${params.id}${kept}`, 'id');
  }
  return { body: await receipt(app.db, record) };
};
