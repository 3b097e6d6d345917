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
  /** What was held for it, and the prompt bound and output allowance that covered; null when not known. */
  held_micros: number | null;
  held_prompt_tokens: number | null;
  held_output_tokens: number | null;
}

export interface UsageFilter {
  accountId?: number;
  keyId?: number;
  model?: string;
  provider?: string;
  /** One status, or a range of them: `ok` is below 400, `error` 400 and above. */
  status?: number | 'ok' | 'error';
  /** Epoch ms, inclusive / exclusive. */
  from?: number;
  to?: number;
}

function filtered(db: Knex, f: UsageFilter): Knex.QueryBuilder {
  const q = db('usage_records');
  if (f.accountId !== undefined) q.where('account_id', f.accountId);
  if (f.keyId !== undefined) q.andWhere('key_id', f.keyId);
  if (f.model !== undefined) q.andWhere('model', f.model);
  if (f.provider !== undefined) q.andWhere('provider', f.provider);
  if (f.status === 'ok') q.andWhere('status', '<', 400);
  else if (f.status === 'error') q.andWhere('status', '>=', 400);
  else if (f.status !== undefined) q.andWhere('status', f.status);
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
    held_micros: num(r.held_micros),
    held_prompt_tokens: num(r.held_prompt_tokens),
    held_output_tokens: num(r.held_output_tokens),
  };
}

/** One record, by its request id or (digits) its own id; null when there is none. */
export async function usageRecord(db: Knex, id: string): Promise<UsageRecord | null> {
  const row = await db('usage_records')
    .where(/^\d{1,15}$/.test(id) ? 'id' : 'request_id', /^\d{1,15}$/.test(id) ? Number(id) : id)
    .first();
  return row ? toRecord(row) : null;
}

/**
 * Every record the filter selects, newest first from `beforeId`, read `batch` at a time: an export of any size is
 * never in memory at once.
 */
export async function* eachUsageRecord(
  db: Knex,
  f: UsageFilter,
  beforeId?: number,
  batch = 1000,
): AsyncGenerator<UsageRecord> {
  let before = beforeId;
  for (;;) {
    const rows = await usageRecords(db, f, { limit: batch, beforeId: before });
    yield* rows;
    if (rows.length < batch) return;
    before = rows[rows.length - 1].id;
  }
}

export interface Activity {
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_micros: number;
}

/** Requests, errors (status 400 and above), tokens and cost of what the filter selects. */
export async function usageActivity(db: Knex, f: UsageFilter): Promise<Activity> {
  const [r] = (await filtered(db, f).select(aggregates(db))) as Record<string, unknown>[];
  return activityOf(r);
}

/** The sums an Activity is made of, as select expressions (the same in SQLite and MariaDB). */
const aggregates = (db: Knex) => [
  db.raw('count(*) as requests'),
  db.raw('sum(case when status >= 400 then 1 else 0 end) as errors'),
  db.raw('sum(prompt_tokens) as prompt'),
  db.raw('sum(completion_tokens) as completion'),
  db.raw('sum(cost_micros) as cost'),
];

const activityOf = (r: Record<string, unknown>): Activity => ({
  requests: Number(r.requests ?? 0),
  errors: Number(r.errors ?? 0),
  prompt_tokens: Number(r.prompt ?? 0),
  completion_tokens: Number(r.completion ?? 0),
  cost_micros: Number(r.cost ?? 0),
});

/** The same per value of `by` (a model, a provider, a route), dearest first. */
export async function activityBy(
  db: Knex,
  f: UsageFilter,
  by: ('model' | 'provider')[],
): Promise<(Activity & { model?: string; provider?: string | null })[]> {
  const rows = (await filtered(db, f)
    .select(...by, ...aggregates(db))
    .groupBy(...by)
    .orderBy([{ column: 'cost', order: 'desc' }, ...by.map((column) => ({ column }))])) as Record<string, unknown>[];
  return rows.map((r) => ({
    ...Object.fromEntries(by.map((k) => [k, (r[k] as string | null) ?? null])),
    ...activityOf(r),
  }));
}

/**
 * The latency (ms) below which `q` of the selected records with a latency fall (nearest rank), or null without any:
 * one ordered read of a single row per quantile, so no list of latencies is held in memory.
 */
export async function latencyQuantiles(db: Knex, f: UsageFilter, qs: number[]): Promise<(number | null)[]> {
  const [{ n }] = (await filtered(db, f).whereNotNull('latency_ms').count({ n: '*' })) as { n: unknown }[];
  const count = Number(n);
  if (!count) return qs.map(() => null);
  return Promise.all(
    qs.map(async (q) => {
      const rank = Math.min(count, Math.max(1, Math.ceil(q * count)));
      const row = await filtered(db, f)
        .whereNotNull('latency_ms')
        .orderBy('latency_ms')
        .offset(rank - 1)
        .first('latency_ms');
      return row ? Number(row.latency_ms) : null;
    }),
  );
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
