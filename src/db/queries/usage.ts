/** Reading usage records: the console's usage pages and the CLI's `usage list` share these queries. */
import type { Knex } from 'knex';

export interface UsageRecord {
  id: number;
  request_id: string;
  account_id: number;
  key_id: number;
  model: string;
  provider: string | null;
  endpoint: string;
  status: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  /** Of the cache writes: the 1-hour ones. */
  cache_write_1h_tokens: number;
  reasoning_tokens: number;
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
    prompt_tokens: Number(r.prompt_tokens),
    completion_tokens: Number(r.completion_tokens),
    cached_tokens: Number(r.cached_tokens ?? 0),
    cache_write_tokens: Number(r.cache_write_tokens ?? 0),
    cache_write_1h_tokens: Number(r.cache_write_1h_tokens ?? 0),
    reasoning_tokens: Number(r.reasoning_tokens ?? 0),
    counted: String(r.counted),
    cost_micros: Number(r.cost_micros),
    latency_ms: num(r.latency_ms),
    ttfb_ms: num(r.ttfb_ms),
    created_at: Number(r.created_at),
  };
}

/** Newest first; `beforeId` pages (the id of the last row of the previous page). */
export async function usageRecords(db: Knex, f: UsageFilter, page: { limit: number; beforeId?: number }): Promise<UsageRecord[]> {
  const q = filtered(db, f).orderBy('id', 'desc').limit(page.limit);
  if (page.beforeId !== undefined) q.andWhere('id', '<', page.beforeId);
  return (await q).map(toRecord);
}

export interface ModelTotals {
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  /** Of the cache writes: the 1-hour ones. */
  cache_write_1h_tokens: number;
  reasoning_tokens: number;
  cost_micros: number;
}

/** Per model, over everything the filter selects. */
export async function usageTotals(db: Knex, f: UsageFilter): Promise<ModelTotals[]> {
  const rows = (await filtered(db, f)
    .select('model')
    .count({ requests: '*' })
    .sum({ prompt_tokens: 'prompt_tokens', completion_tokens: 'completion_tokens', cached_tokens: 'cached_tokens', cache_write_tokens: 'cache_write_tokens', cache_write_1h_tokens: 'cache_write_1h_tokens', reasoning_tokens: 'reasoning_tokens', cost: 'cost_micros' })
    .groupBy('model')
    .orderBy('model')) as Record<string, unknown>[];
  return rows.map((t) => ({
    model: String(t.model),
    requests: Number(t.requests),
    prompt_tokens: Number(t.prompt_tokens),
    completion_tokens: Number(t.completion_tokens),
    cached_tokens: Number(t.cached_tokens ?? 0),
    cache_write_tokens: Number(t.cache_write_tokens ?? 0),
    cache_write_1h_tokens: Number(t.cache_write_1h_tokens ?? 0),
    reasoning_tokens: Number(t.reasoning_tokens ?? 0),
    cost_micros: Number(t.cost),
  }));
}
