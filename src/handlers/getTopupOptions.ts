import { formatUsd } from '../money';
import type { Handler } from './types';

/** GET /console/api/topup/options: whether card payments are available, and their bounds. */
export const getTopupOptions: Handler<'getTopupOptions'> = async ({ app }) => ({
  body: {
    card: app.cards !== null,
    min_usd: formatUsd(app.config.console.topup_min_micros),
    max_usd: formatUsd(app.config.console.topup_max_micros),
    currency: 'usd',
  },
});
