/** Reading the refused-call counts (billing/refusals.ts writes them): the console's usage pages. */
import type { Knex } from 'knex';
import { utcDayOf } from '../dialect';

const DAY = 86_400_000;

export interface RefusalFilter {
  accountId: number;
  keyId?: number;
  /** Epoch ms, inclusive / exclusive. */
  from?: number;
  to?: number;
}

export interface RefusalRow {
  /** Epoch ms: the minute's (or the UTC day's) start. */
  at: number;
  key_id: number;
  endpoint: string;
  status: number;
  reason: string;
  count: number;
}

function filtered(db: Knex, f: RefusalFilter): Knex.QueryBuilder {
  const q = db('refusals').where('account_id', f.accountId);
  if (f.keyId !== undefined) q.andWhere('key_id', f.keyId);
  if (f.from !== undefined) q.andWhere('minute', '>=', f.from);
  if (f.to !== undefined) q.andWhere('minute', '<', f.to);
  return q;
}

/** The counts per minute or per UTC day, newest first, `limit` rows. */
export async function refusalRows(
  db: Knex,
  f: RefusalFilter,
  by: 'minute' | 'day',
  limit: number,
): Promise<RefusalRow[]> {
  const at = by === 'day' ? utcDayOf(db, 'minute') : db.raw('minute');
  const rows = (await filtered(db, f)
    .select({ at, key_id: 'key_id', endpoint: 'endpoint', status: 'status', reason: 'reason' })
    .sum({ count: 'count' })
    // Two calls: knex's groupBy with an expression first drops the columns after it (MySQL and SQLite then grouped
    // by the minute alone and picked any key's row; PostgreSQL refuses such a query).
    .groupBy(at)
    .groupBy('key_id', 'endpoint', 'status', 'reason')
    .orderBy([{ column: 'at', order: 'desc' }, { column: 'count', order: 'desc' }, { column: 'key_id' }])
    .limit(limit)) as Record<string, unknown>[];
  // MariaDB answers a SUM as a decimal string, SQLite as a number (and PostgreSQL as numeric, read as a number).
  return rows.map((r) => ({
    at: Number(r.at),
    key_id: Number(r.key_id),
    endpoint: String(r.endpoint),
    status: Number(r.status),
    reason: String(r.reason),
    count: Number(r.count),
  }));
}

/** The counts per status and reason over the whole filtered range, most first. */
export async function refusalTotals(
  db: Knex,
  f: RefusalFilter,
): Promise<{ status: number; reason: string; count: number }[]> {
  const rows = (await filtered(db, f)
    .select('status', 'reason')
    .sum({ count: 'count' })
    .groupBy('status', 'reason')
    .orderBy([{ column: 'count', order: 'desc' }, { column: 'reason' }])) as Record<string, unknown>[];
  return rows.map((r) => ({ status: Number(r.status), reason: String(r.reason), count: Number(r.count) }));
}

/** Refused calls per UTC day (the day's number since the epoch) from `from` on. */
export async function refusedPerDay(db: Knex, accountId: number, from: number): Promise<Map<number, number>> {
  const day = utcDayOf(db, 'minute');
  const rows = (await filtered(db, { accountId, from }).select({ day }).sum({ count: 'count' }).groupBy(day)) as Record<
    string,
    unknown
  >[];
  return new Map(rows.map((r) => [Math.round(Number(r.day) / DAY), Number(r.count)]));
}
