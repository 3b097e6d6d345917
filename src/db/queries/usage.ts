/** Reading usage records: the console's usage pages and the CLI's `usage list` share these queries. */
import type { Knex } from 'knex';
import { USAGE_CLASSES, type UsageColumn } from '../../usage';

/** Every usage class's count, by its column (usage.ts). */
export type UsageCounts = Record<UsageColumn, number>;

export interface UsageRecord extends UsageCounts {
  id: number;
  request_id: string;
  account_id: number;
  key_id: number;
  model: string;
  provider: string | null;
  endpoint: string;
  status: number;
  counted: string;
  cost_micros: number;
  latency_ms: number | null;
  ttfb_ms: number | null;
  created_at: number;
}

export interface UsageFilter {
  accountId?: number;
  keyId?: number;
  /** Epoch ms, inclusive / exclusive. */
  from?: number;
  to?: number;
}

function filtered(db: Knex, f: UsageFilter): Knex.QueryBuilder {
  const q = db('usage_records');
  if (f.accountId !== undefined) q.where('account_id', f.accountId);
  if (f.keyId !== undefined) q.andWhere('key_id', f.keyId);
  if (f.from !== undefined) q.andWhere('created_at', '>=', f.from);
  if (f.to !== undefined) q.andWhere('created_at', '<', f.to);
  return q;
}

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** The usage columns of a row (or of a sum of rows) as numbers; a column a row lacks is 0. */
const counts = (r: Record<string, unknown>): UsageCounts =>
  Object.fromEntries(USAGE_CLASSES.map((c) => [c.column, Number(r[c.column] ?? 0)])) as UsageCounts;

function toRecord(r: Record<string, unknown>): UsageRecord {
  return {
    id: Number(r.id),
    request_id: String(r.request_id),
    account_id: Number(r.account_id),
    key_id: Number(r.key_id),
    model: String(r.model),
    provider: (r.provider as string | null) ?? null,
    endpoint: String(r.endpoint),
    status: Number(r.status),
    ...counts(r),
    counted: String(r.counted),
    cost_micros: Number(r.cost_micros),
    latency_ms: num(r.latency_ms),
    ttfb_ms: num(r.ttfb_ms),
    created_at: Number(r.created_at),
  };
}

/** Newest first; `beforeId` pages (the id of the last row of the previous page). */
export async function usageRecords(
  db: Knex,
  f: UsageFilter,
  page: { limit: number; beforeId?: number },
): Promise<UsageRecord[]> {
  const q = filtered(db, f).orderBy('id', 'desc').limit(page.limit);
  if (page.beforeId !== undefined) q.andWhere('id', '<', page.beforeId);
  return (await q).map(toRecord);
}

export interface ModelTotals extends UsageCounts {
  model: string;
  requests: number;
  cost_micros: number;
}

/** Per model, over everything the filter selects. */
export async function usageTotals(db: Knex, f: UsageFilter): Promise<ModelTotals[]> {
  const rows = (await filtered(db, f)
    .select('model')
    .count({ requests: '*' })
    .sum({ ...Object.fromEntries(USAGE_CLASSES.map((c) => [c.column, c.column])), cost: 'cost_micros' })
    .groupBy('model')
    .orderBy('model')) as Record<string, unknown>[];
  return rows.map((t) => ({
    model: String(t.model),
    requests: Number(t.requests),
    ...counts(t),
    cost_micros: Number(t.cost),
  }));
}
