import { usageRecord } from '../db/queries/usage';
import { receipt } from '../services/adminPages';
import { errors } from '../errors';
import type { Handler } from './types';

/** GET /admin/api/usage/{id}: a request's receipt — its record, how it was counted, its hold, its charge, its ledger rows. */
export const adminGetUsage: Handler<'adminGetUsage'> = async ({ params, app }) => {
  const record = await usageRecord(app.db, params.id);
  if (!record) throw errors.notFoundResource(`No usage record of request ${params.id}`, 'id');
  return { body: await receipt(app.db, record) };
};
