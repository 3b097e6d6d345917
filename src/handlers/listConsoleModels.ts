import type { components } from '../../generated/openapi';
import type { PriceConfig } from '../config/types';
import { formatUsd } from '../money';
import { USAGE_CLASS_VIEWS } from '../services/views';
import { USAGE_CLASSES, type PriceKey, type UsageClass } from '../usage';
import type { Handler } from './types';

type ConsoleModel = components['schemas']['ConsoleModel'];

/**
 * GET /console/api/models: every configured model with its prices by usage class (USD per million units; a class
 * priced by grade, USD per unit by grade), and the classes, so that the console shows each price in its own unit.
 */
export const listConsoleModels: Handler<'listConsoleModels'> = async ({ app }) => ({
  body: {
    data: app.config.models.map((m) => ({
      id: m.id,
      kind: m.kind,
      owned_by: m.owned_by,
      input_usd_per_million: formatUsd(m.price.input ?? 0),
      output_usd_per_million: formatUsd(m.price.output ?? 0),
      ...(m.price.grades?.images ? { usd_per_image: perUnit(m.price.grades.images) } : {}),
      ...pricesByClass(m.price),
    })),
    classes: USAGE_CLASS_VIEWS,
  },
});

/**
 * A model's base prices by class name, read from the usage classes: a class that costs nothing is left out (the
 * loaded configuration leaves out what was not priced, or holds 0 for the first classes), so a speech model priced
 * per character shows that price alone, and a free moderation model none.
 */
function pricesByClass(price: PriceConfig): Pick<ConsoleModel, 'prices' | 'grade_prices'> {
  const prices: ConsoleModel['prices'] = {};
  const grades: ConsoleModel['grade_prices'] = {};
  for (const c of USAGE_CLASSES as readonly UsageClass[]) {
    if (c.price === null) continue;
    const key = c.price as PriceKey;
    const table = price.grades?.[key];
    if (c.graded) {
      if (table) grades[c.name] = perUnit(table);
    } else if ((price[key] ?? 0) > 0) prices[c.name] = formatUsd(price[key]!);
  }
  return { prices, grade_prices: grades };
}

/** Prices by grade, kept as micro-USD per million units (config/load.ts), as USD per unit. */
const perUnit = (grades: Readonly<Record<string, number>>) =>
  Object.fromEntries(Object.entries(grades).map(([grade, rate]) => [grade, formatUsd(rate / 1_000_000)]));
