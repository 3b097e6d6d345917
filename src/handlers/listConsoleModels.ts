import { formatUsd } from '../money';
import type { Handler } from './types';

/**
 * GET /console/api/models: every configured model with its prices (USD per million tokens; an image model's per
 * image, by size and quality).
 */
export const listConsoleModels: Handler<'listConsoleModels'> = async ({ app }) => ({
  body: {
    data: app.config.models.map((m) => ({
      id: m.id,
      kind: m.kind,
      owned_by: m.owned_by,
      input_usd_per_million: formatUsd(m.price.input ?? 0),
      output_usd_per_million: formatUsd(m.price.output ?? 0),
      ...(m.price.grades?.images ? { usd_per_image: perImage(m.price.grades.images) } : {}),
    })),
  },
});

/** Prices by grade, kept as micro-USD per million images (config/load.ts), as USD per image. */
const perImage = (grades: Readonly<Record<string, number>>) =>
  Object.fromEntries(Object.entries(grades).map(([grade, rate]) => [grade, formatUsd(rate / 1_000_000)]));
