import { formatUsd } from '../money';
import type { Handler } from './types';

/** GET /console/api/models: every configured model with its prices (USD per million tokens). */
export const listConsoleModels: Handler<'listConsoleModels'> = async ({ app }) => ({
  body: {
    data: app.config.models.map((m) => ({
      id: m.id,
      kind: m.kind,
      owned_by: m.owned_by,
      input_usd_per_million: formatUsd(m.price.input ?? 0),
      output_usd_per_million: formatUsd(m.price.output ?? 0),
    })),
  },
});
