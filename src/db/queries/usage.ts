/**
 * Reading usage: the console's usage pages, the operator's reports and the CLI's `usage list` share these queries.
 * Sums over a range read the daily rollups (db/rollups.ts) for the whole UTC days in it and the usage records only
 * for the parts of a day at its edges (bounded by an index on the time): the answer is the records' sum, and it does
 * not grow with the months of records kept. Lists of records (a page of a search, a receipt) read the records.
 */
import type { Knex } from 'knex';
import { USAGE_CLASSES, type UsageColumn } from '../../usage';
import { DAY_MS, dayOf } from '../rollups';

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

type Span = { from?: number; to?: number };

/**
 * A range [from, to) as the whole UTC days in it (read from the rollups; null: none) and the parts of a day at its
 * edges (read from the records).
 */
export function splitRange(from?: number, to?: number): { days: Span | null; edges: Span[] } {
  const start = from === undefined || from % DAY_MS === 0 ? from : dayOf(from) + DAY_MS;
  const end = to === undefined ? undefined : dayOf(to);
  if (start !== undefined && end !== undefined && start >= end) return { days: null, edges: [{ from, to }] };
  const edges: Span[] = [];
  if (from !== undefined && start !== from) edges.push({ from, to: start });
  if (to !== undefined && end !== to) edges.push({ from: end, to });
  return { days: { from: start, to: end }, edges };
}

/** The rollup rows of the filter's account, key, model and provider over the days of `days`. */
function rolled(db: Knex, f: UsageFilter, days: Span): Knex.QueryBuilder {
  const q = db('usage_rollups');
  if (f.accountId !== undefined) q.where('account_id', f.accountId);
  if (f.keyId !== undefined) q.andWhere('key_id', f.keyId);
  if (f.model !== undefined) q.andWhere('model', f.model);
  if (f.provider !== undefined) q.andWhere('provider', f.provider);
  if (days.from !== undefined) q.andWhere('day', '>=', days.from);
  if (days.to !== undefined) q.andWhere('day', '<', days.to);
  return q;
}

/**
 * The same sums from the rollups and from the records of the edges (a filter on the status reads the records only:
 * the rollups keep errors, not statuses), one query each; `sums` gives the select for either source.
 */
async function summed(
  db: Knex,
  f: UsageFilter,
  query: (q: Knex.QueryBuilder, rollup: boolean) => Knex.QueryBuilder,
): Promise<Record<string, unknown>[][]> {
  if (f.status !== undefined) return [await query(filtered(db, f), false)];
  const { days, edges } = splitRange(f.from, f.to);
  const parts = edges.map((e) => query(filtered(db, { ...f, ...e }), false));
  if (days) parts.push(query(rolled(db, f, days), true));
  return Promise.all(parts);
}

/** Requests, errors, tokens and cost, as select expressions over the records or over the rollups. */
const aggregates = (db: Knex, rollup: boolean) =>
  rollup
    ? [
        db.raw('sum(requests) as requests'),
        db.raw('sum(errors) as errors'),
        db.raw('sum(prompt_tokens) as prompt'),
        db.raw('sum(completion_tokens) as completion'),
        db.raw('sum(cost_micros) as cost'),
      ]
    : [
        db.raw('count(*) as requests'),
        db.raw('sum(case when status >= 400 then 1 else 0 end) as errors'),
        db.raw('sum(prompt_tokens) as prompt'),
        db.raw('sum(completion_tokens) as completion'),
        db.raw('sum(cost_micros) as cost'),
      ];

const activityOf = (r: Record<string, unknown> | undefined): Activity => ({
  requests: Number(r?.requests ?? 0),
  errors: Number(r?.errors ?? 0),
  prompt_tokens: Number(r?.prompt ?? 0),
  completion_tokens: Number(r?.completion ?? 0),
  cost_micros: Number(r?.cost ?? 0),
});

const addActivity = (a: Activity, b: Activity): Activity => ({
  requests: a.requests + b.requests,
  errors: a.errors + b.errors,
  prompt_tokens: a.prompt_tokens + b.prompt_tokens,
  completion_tokens: a.completion_tokens + b.completion_tokens,
  cost_micros: a.cost_micros + b.cost_micros,
});

/** Requests, errors (status 400 and above), tokens and cost of what the filter selects. */
export async function usageActivity(db: Knex, f: UsageFilter): Promise<Activity> {
  const parts = await summed(db, f, (q, rollup) => q.select(aggregates(db, rollup)));
  return parts.map((rows) => activityOf(rows[0])).reduce(addActivity, activityOf(undefined));
}

type ByKey = 'model' | 'provider';

/** The same per value of `by` (a model, a provider, a route), dearest first. */
export async function activityBy(
  db: Knex,
  f: UsageFilter,
  by: ByKey[],
): Promise<(Activity & { model?: string; provider?: string | null })[]> {
  const parts = await summed(db, f, (q, rollup) => q.select(...by, ...aggregates(db, rollup)).groupBy(...by));
  const groups = new Map<string, Activity & { model?: string; provider?: string | null }>();
  for (const r of parts.flat()) {
    // The rollups keep "no provider" as ''.
    const keys = Object.fromEntries(by.map((k) => [k, (r[k] as string | null) || (k === 'provider' ? null : '')]));
    const id = JSON.stringify(by.map((k) => keys[k]));
    const had = groups.get(id);
    groups.set(id, { ...keys, ...(had ? addActivity(had, activityOf(r)) : activityOf(r)) });
  }
  return [...groups.values()].sort((a, b) => b.cost_micros - a.cost_micros || compareKeys(a, b, by));
}

/** Ascending, "no provider" (null) first, as the databases order a NULL. */
function compareKeys(a: Partial<Record<ByKey, string | null>>, b: Partial<Record<ByKey, string | null>>, by: ByKey[]) {
  for (const k of by) {
    const x = a[k] ?? null;
    const y = b[k] ?? null;
    if (x === y) continue;
    if (x === null) return -1;
    if (y === null) return 1;
    return x < y ? -1 : 1;
  }
  return 0;
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
  const classSums = Object.fromEntries(USAGE_CLASSES.map((c) => [c.column, c.column]));
  const parts = await summed(db, f, (q, rollup) =>
    q
      .select('model')
      .sum({ ...classSums, cost: 'cost_micros', ...(rollup ? { requests: 'requests' } : {}) })
      .modify((m) => (rollup ? m : m.count({ requests: '*' })))
      .groupBy('model'),
  );
  const totals = new Map<string, ModelTotals>();
  for (const t of parts.flat()) {
    const model = String(t.model);
    const c = counts(t);
    const had = totals.get(model);
    if (!had) {
      totals.set(model, { model, requests: Number(t.requests), ...c, cost_micros: Number(t.cost) });
      continue;
    }
    had.requests += Number(t.requests);
    had.cost_micros += Number(t.cost);
    for (const k of USAGE_CLASSES) had[k.column] += c[k.column];
  }
  return [...totals.values()].sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
}

/**
 * Requests, cost and each usage class's count per UTC day from `start` (a midnight) on, of one account: the rollups
 * alone. Days without any are absent.
 */
export async function dailyUsage(
  db: Knex,
  accountId: number,
  start: number,
): Promise<Map<number, { requests: number; cost_micros: number } & UsageCounts>> {
  const rows = (await db('usage_rollups')
    .where('account_id', accountId)
    .andWhere('day', '>=', start)
    .select('day')
    .sum({
      requests: 'requests',
      cost: 'cost_micros',
      ...Object.fromEntries(USAGE_CLASSES.map((c) => [c.column, c.column])),
    })
    .groupBy('day')) as Record<string, unknown>[];
  // MariaDB answers a SUM as a decimal string, SQLite as a number.
  return new Map(
    rows.map((r) => [
      Number(r.day),
      { requests: Number(r.requests ?? 0), cost_micros: Number(r.cost ?? 0), ...counts(r) },
    ]),
  );
}

/** How many requests an account made, ever (the rollups: records past retention count too). */
export async function requestCount(db: Knex, accountId: number): Promise<number> {
  const [r] = (await db('usage_rollups').where('account_id', accountId).sum({ n: 'requests' })) as { n: unknown }[];
  return Number(r?.n ?? 0);
}

export interface PruneOptions {
  /** Records per DELETE (by primary key): a short statement, whatever the table's size. */
  batch?: number;
  /** The pause between batches, so that the paid path's writes never queue behind a long run of deletes. */
  pauseMs?: number;
  /** Asked between batches: true stops (the process is shutting down). */
  stopped?: () => boolean;
}

/**
 * Deletes the usage records created before `before` (epoch ms), oldest first, `batch` at a time by id with a pause
 * between; returns how many. The rollups and the ledger are left alone. Several processes may run it at once: a
 * batch another process deleted first deletes nothing (idempotent), so no lock is needed.
 */
export async function pruneUsageRecords(db: Knex, before: number, o: PruneOptions = {}): Promise<number> {
  const batch = o.batch ?? 1000;
  let total = 0;
  for (;;) {
    // Ordered by the time index itself: the oldest `batch`, read without sorting the rest.
    const ids = (
      await db('usage_records').where('created_at', '<', before).orderBy('created_at').limit(batch).select('id')
    ).map((r) => Number(r.id));
    if (!ids.length) return total;
    total += await db('usage_records').whereIn('id', ids).del();
    if (ids.length < batch || o.stopped?.()) return total;
    await new Promise((r) => setTimeout(r, o.pauseMs ?? 50));
  }
}
