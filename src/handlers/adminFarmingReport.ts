import { farmingReport } from '../services/farming';
import type { Handler } from './types';

/** GET /admin/api/farming: referrals per referrer, accounts per registration network, unconfirmed accounts. */
export const adminFarmingReport: Handler<'adminFarmingReport'> = async ({ app }) => ({
  body: await farmingReport(app.db),
});
