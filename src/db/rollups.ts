/**
 * Daily usage rollups: one row per (UTC day, account, key, model, provider) with the sums the usage pages show —
 * requests, errors (status 400 and above), every usage class's count (a column per class, as the usage records carry
 * them) and the cost in micro-USD. They are added to in the transaction that writes the usage records (a batch is
 * summed in memory first: one upsert per group, so the paid path barely pays for them), so they always equal the sum
 * of the records, and they outlive the records that retention deletes (`usage.retention_days`).
 *
 * The upsert is written per database: SQLite and PostgreSQL `ON CONFLICT … DO UPDATE SET x = t.x + excluded.x`,
 * MySQL / MariaDB `ON DUPLICATE KEY UPDATE x = x + VALUES(x)`. A provider is '' when a record names none (NULLs are
 * never equal, so a unique key over a NULL column would not merge them); reads give it back as null.
 */
import type { Knex } from 'knex';
import { USAGE_CLASSES } from '../usage';
import { dialectOf, type Dialect } from './dialect';

export const DAY_MS = 86_400_000;

/** What a row is keyed by, in the order of its primary key (account first: the console reads one account's days). */
export const ROLLUP_KEYS = ['account_id', 'day', 'key_id', 'model', 'provider'] as const;
/** What a row sums. */
export const ROLLUP_SUMS = ['requests', 'errors', ...USAGE_CLASSES.map((c) => c.column), 'cost_micros'] as const;
export const ROLLUP_COLUMNS = [...ROLLUP_KEYS, ...ROLLUP_SUMS];

/** The UTC day (epoch ms of its midnight) of an instant. */
export const dayOf = (ms: number) => ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);

/** Usage records (rows as written to usage_records) summed into rollup rows, one per group. */
export function rollupRows(records: Record<string, unknown>[]): Record<string, number | string>[] {
  const groups = new Map<string, Record<string, number | string>>();
  for (const r of records) {
    const day = dayOf(Number(r.created_at));
    const provider = (r.provider as string | null | undefined) ?? '';
    const k = `${r.account_id}\u0000${day}\u0000${r.key_id}\u0000${r.model}\u0000${provider}`;
    let g = groups.get(k);
    if (!g) {
      g = { account_id: Number(r.account_id), day, key_id: Number(r.key_id), model: String(r.model), provider };
      for (const c of ROLLUP_SUMS) g[c] = 0;
      groups.set(k, g);
    }
    (g.requests as number) += 1;
    if (Number(r.status) >= 400) (g.errors as number) += 1;
    for (const c of USAGE_CLASSES) (g[c.column] as number) += Number(r[c.column] ?? 0);
    (g.cost_micros as number) += Number(r.cost_micros ?? 0);
  }
  return [...groups.values()];
}

/** Each value in ROLLUP_COLUMNS order: the bindings of one row of the upsert. */
export const rollupBindings = (row: Record<string, unknown>): unknown[] => ROLLUP_COLUMNS.map((c) => row[c]);

/** The conflict clause that adds a row's sums to the row already there. */
export function rollupConflict(dialect: Dialect): string {
  if (dialect === 'mysql')
    return `ON DUPLICATE KEY UPDATE ${ROLLUP_SUMS.map((c) => `${c} = ${c} + VALUES(${c})`).join(', ')}`;
  return `ON CONFLICT (${ROLLUP_KEYS.join(', ')}) DO UPDATE SET ${ROLLUP_SUMS.map(
    (c) => `${c} = usage_rollups.${c} + excluded.${c}`,
  ).join(', ')}`;
}

/** An upsert of `rows` rows (placeholders `?`: SQLite, mysql2 and knex's raw all take them). */
export function rollupUpsertSql(dialect: Dialect, rows: number): string {
  const one = `(${ROLLUP_COLUMNS.map(() => '?').join(', ')})`;
  return `INSERT INTO usage_rollups (${ROLLUP_COLUMNS.join(', ')}) VALUES ${Array(rows).fill(one).join(', ')} ${rollupConflict(dialect)}`;
}

/** Rows per upsert: far below SQLite's 32766 bound variables and MySQL's 65535 placeholders. */
export const ROLLUP_BATCH = 200;

/** Adds rollup rows through knex (in the caller's transaction). */
export async function addRollups(db: Knex, rows: Record<string, unknown>[]): Promise<void> {
  const dialect = dialectOf(db);
  for (let i = 0; i < rows.length; i += ROLLUP_BATCH) {
    const part = rows.slice(i, i + ROLLUP_BATCH);
    await db.raw(rollupUpsertSql(dialect, part.length), part.flatMap(rollupBindings) as Knex.RawBinding[]);
  }
}

/**
 * Sums the usage records with ids in (afterId, toId] into the rollups, in the database (INSERT … SELECT): the
 * migration's backfill and the benchmark's fill, a range at a time.
 */
export async function rollUpRange(db: Knex, afterId: number, toId: number): Promise<void> {
  const dialect = dialectOf(db);
  const day = `(created_at - (created_at % ${DAY_MS}))`;
  const sums = [
    'count(*)',
    'sum(case when status >= 400 then 1 else 0 end)',
    ...USAGE_CLASSES.map((c) => `sum(${c.column})`),
    'sum(cost_micros)',
  ];
  const groupBy = `account_id, ${day}, key_id, model, coalesce(provider, '')`;
  // SQLite needs a WHERE in an INSERT … SELECT with an upsert clause (its parser's ambiguity with a join's ON).
  const sql =
    `INSERT INTO usage_rollups (${ROLLUP_COLUMNS.join(', ')}) ` +
    `SELECT ${groupBy}, ${sums.join(', ')} FROM usage_records WHERE id > ? AND id <= ? GROUP BY ${groupBy} ` +
    rollupConflict(dialect);
  await db.raw(sql, [afterId, toId]);
}
