import { utcDayOf } from '../db/dialect';
import { refusedPerDay } from '../db/queries/refusals';
import { formatUsd } from '../money';
import { USAGE_CLASS_VIEWS } from '../services/views';
import { USAGE_CLASSES } from '../usage';
import type { Handler } from './types';

const DAY = 86_400_000;

type Row = { day: unknown; requests: unknown; cost: unknown } & Record<string, unknown>;

/**
 * GET /console/api/usage/daily: requests, cost and what was used by usage class per UTC day, the last `days` days,
 * every day present; and the calls refused that day (counted apart: they reached no model and cost nothing).
 */
export const getDailyUsage: Handler<'getDailyUsage'> = async ({ session, query, app }) => {
  const days = query.days ?? 14;
  const today = Math.floor(Date.now() / DAY);
  const start = (today - days + 1) * DAY;
  const dayStart = utcDayOf(app.db, 'created_at');
  // One sum per class, aliased by its name (a class's name is a plain identifier, as its column is).
  const sums = Object.fromEntries(USAGE_CLASSES.map((c) => [`u_${c.name}`, c.column]));
  const rows = (await app
    .db('usage_records')
    .where('account_id', session.accountId)
    .andWhere('created_at', '>=', start)
    .select({ day: dayStart })
    .count({ requests: '*' })
    .sum({ cost: 'cost_micros', ...sums })
    .groupBy(dayStart)) as Row[];
  const byDay = new Map(rows.map((r) => [Math.round(Number(r.day) / DAY), r]));
  const refused = await refusedPerDay(app.db, session.accountId, start);
  const data = Array.from({ length: days }, (_, i) => {
    const day = today - days + 1 + i;
    const r = byDay.get(day);
    return {
      date: new Date(day * DAY).toISOString().slice(0, 10),
      requests: Number(r?.requests ?? 0),
      cost_usd: formatUsd(Number(r?.cost ?? 0)),
      // MariaDB answers a SUM as a decimal string, SQLite as a number.
      usage: Object.fromEntries(USAGE_CLASSES.map((c) => [c.name, Number(r?.[`u_${c.name}`] ?? 0)])),
      refused: refused.get(day) ?? 0,
    };
  });
  return { body: { data, classes: USAGE_CLASS_VIEWS } };
};
