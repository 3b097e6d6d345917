import { refusedPerDay } from '../db/queries/refusals';
import { dailyUsage } from '../db/queries/usage';
import { formatUsd } from '../money';
import { USAGE_CLASS_VIEWS } from '../services/views';
import { USAGE_CLASSES } from '../usage';
import type { Handler } from './types';

const DAY = 86_400_000;

/**
 * GET /console/api/usage/daily: requests, cost and what was used by usage class per UTC day, the last `days` days,
 * every day present, from the daily rollups; and the calls refused that day (counted apart: they reached no model and cost nothing).
 */
export const getDailyUsage: Handler<'getDailyUsage'> = async ({ session, query, app }) => {
  const days = query.days ?? 14;
  const today = Math.floor(Date.now() / DAY);
  const start = (today - days + 1) * DAY;
  const byDay = await dailyUsage(app.db, session.accountId, start);
  const refused = await refusedPerDay(app.db, session.accountId, start);
  const data = Array.from({ length: days }, (_, i) => {
    const day = today - days + 1 + i;
    const r = byDay.get(day * DAY);
    return {
      date: new Date(day * DAY).toISOString().slice(0, 10),
      requests: r?.requests ?? 0,
      cost_usd: formatUsd(r?.cost_micros ?? 0),
      usage: Object.fromEntries(USAGE_CLASSES.map((c) => [c.name, r?.[c.column] ?? 0])),
      refused: refused.get(day) ?? 0,
    };
  });
  return { body: { data, classes: USAGE_CLASS_VIEWS } };
};
