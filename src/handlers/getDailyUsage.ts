import { formatUsd } from '../money';
import type { Handler } from './types';

const DAY = 86_400_000;

/** GET /console/api/usage/daily: requests and cost per UTC day, the last `days` days, every day present. */
export const getDailyUsage: Handler<'getDailyUsage'> = async ({ session, query, app }) => {
  const days = query.days ?? 14;
  const today = Math.floor(Date.now() / DAY);
  const start = (today - days + 1) * DAY;
  const dayStart = app.db.raw('(created_at - (created_at % ?))', [DAY]);
  const rows = (await app
    .db('usage_records')
    .where('account_id', session.accountId)
    .andWhere('created_at', '>=', start)
    .select({ day: dayStart })
    .count({ requests: '*' })
    .sum({ cost: 'cost_micros' })
    .groupBy(dayStart)) as { day: unknown; requests: unknown; cost: unknown }[];
  const byDay = new Map(rows.map((r) => [Math.round(Number(r.day) / DAY), r]));
  const data = Array.from({ length: days }, (_, i) => {
    const day = today - days + 1 + i;
    const r = byDay.get(day);
    return {
      date: new Date(day * DAY).toISOString().slice(0, 10),
      requests: Number(r?.requests ?? 0),
      cost_usd: formatUsd(Number(r?.cost ?? 0)),
    };
  });
  return { body: { data } };
};
