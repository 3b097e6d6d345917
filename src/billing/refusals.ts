/**
 * Refused calls of known keys, counted in memory and written in batches. A refusal is the cheapest answer the
 * gateway gives — a key with no money is turned away before its body is read — so it must stay cheap: the refused
 * path only increments a count in a Map, keyed by (account, key, minute, status, reason, operation). Every
 * `flush_ms` (and at stop) the counts are added to the `refusals` table in one upsert per batch; each process adds its
 * own, so several processes on one database sum up. Memory is bounded: beyond `max_buckets` distinct counts the
 * oldest is dropped, and what it held is told to `onDropped` (a metric) rather than kept.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { ApiError } from '../errors';
import { dialectOf } from '../db/dialect';

const MINUTE = 60_000;
/** Rows per INSERT: far below SQLite's 32766 bound variables and MariaDB's packet size. */
const BATCH_ROWS = 500;

export interface Refusal {
  accountId: number;
  keyId: number;
  status: number;
  /** account_balance, key_quota, key_budget, key_disabled, key_expired, or rate_limit. */
  reason: string;
  /** The operationId refused. */
  endpoint: string;
}

interface Bucket extends Refusal {
  minute: number;
  count: number;
}

export interface RefusalSettings {
  flush_ms: number;
  max_buckets: number;
}

/**
 * Why an answer counts as a refusal of a known key, or null: a 429 for money (its reason) or for the key's rate, a
 * 401 of a key that exists but is disabled or expired. Other errors (a typo'd key, a bad body) are not refusals.
 */
export function refusalReason(e: Pick<ApiError, 'status' | 'code' | 'reason'>): string | null {
  if (e.status === 429 && e.code === 'insufficient_quota') return e.reason ?? 'account_balance';
  if (e.status === 429 && e.code === 'rate_limit_exceeded') return 'rate_limit';
  if (e.status === 401 && (e.reason === 'key_disabled' || e.reason === 'key_expired')) return e.reason;
  return null;
}

export class RefusalCounts {
  private buckets = new Map<string, Bucket>();
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  /** Told how many refusals were dropped uncounted (memory full, or a write that failed and found no room). */
  onDropped: (n: number) => void = () => undefined;

  constructor(
    private readonly db: Knex,
    private readonly settings: RefusalSettings,
    private readonly log: Logger,
  ) {}

  /** How many distinct counts wait to be written. */
  get size(): number {
    return this.buckets.size;
  }

  /** Counts one refusal: a Map increment, never a query. */
  record(r: Refusal, now = Date.now()): void {
    const minute = now - (now % MINUTE);
    const k = `${r.accountId} ${r.keyId} ${minute} ${r.status} ${r.reason} ${r.endpoint}`;
    const b = this.buckets.get(k);
    if (b) b.count++;
    else this.add(k, { ...r, minute, count: 1 });
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.settings.flush_ms).unref();
  }

  /** Writes what is counted, after a write already under way; then no more timer. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  /** Adds every count so far to the table (one write at a time); a failed write puts its counts back. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.buckets.size === 0) return;
    const taken = this.buckets;
    this.buckets = new Map();
    this.writing = this.write([...taken.values()])
      .catch((e) => {
        this.log.warn(
          { err: (e as Error).message },
          'could not write refused-call counts; keeping them for the next flush',
        );
        for (const [k, b] of taken) this.merge(k, b);
      })
      .finally(() => (this.writing = null));
    await this.writing;
  }

  private async write(rows: Bucket[]): Promise<void> {
    // Each process adds its own counts to the row: additive, whoever wrote the minute before. MySQL names the row
    // that was refused VALUES(), PostgreSQL and SQLite `excluded`.
    const mysql = dialectOf(this.db) === 'mysql';
    const added = this.db.raw(mysql ? '?? + VALUES(??)' : '?? + excluded.??', ['refusals.count', 'count']);
    for (let i = 0; i < rows.length; i += BATCH_ROWS) {
      const batch = rows.slice(i, i + BATCH_ROWS).map((b) => ({
        account_id: b.accountId,
        key_id: b.keyId,
        minute: b.minute,
        status: b.status,
        reason: b.reason,
        endpoint: b.endpoint,
        count: b.count,
      }));
      await this.db('refusals')
        .insert(batch)
        .onConflict(['account_id', 'minute', 'key_id', 'status', 'reason', 'endpoint'])
        .merge({ count: added });
    }
  }

  /** A count put back after a failed write: added to the same bucket, or kept as a new one if there is room. */
  private merge(k: string, b: Bucket): void {
    const have = this.buckets.get(k);
    if (have) have.count += b.count;
    else this.add(k, b);
  }

  /** A new bucket; when memory is full the oldest (first made) goes, and its count is reported as dropped. */
  private add(k: string, b: Bucket): void {
    if (this.buckets.size >= this.settings.max_buckets) {
      const [oldest, gone] = this.buckets.entries().next().value!;
      this.buckets.delete(oldest);
      this.onDropped(gone.count);
    }
    this.buckets.set(k, b);
  }
}
