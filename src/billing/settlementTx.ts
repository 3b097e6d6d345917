/**
 * The statements of a batch of settlements, for each database. On SQLite they are prepared once per connection
 * and run synchronously inside BEGIN IMMEDIATE … COMMIT on the connection taken from knex's pool (knex would build
 * and prepare every statement again, which cost more than the rest of a paid request); on MySQL and PostgreSQL they
 * go through knex in a transaction, except on MySQL the batch's multi-row INSERTs (ledger, usage records, rollups),
 * which are prepared statements run with mysql2's `execute` on the transaction's own connection: knex's building and
 * escaping of them was about a tenth of the gateway's CPU (README, Performance). The logic that uses them
 * (store.ts writeSettlements) is written once.
 */
import { BUDGET_COLUMNS, BUDGET_SPEND_SQL, budgetLeftOf, spendBindings, spendKey } from './budgets';
import type { Knex } from 'knex';
import { transact } from '../db';
import { dialectOf } from '../db/dialect';
import { addRollups, ROLLUP_BATCH, rollupBindings, rollupUpsertSql } from '../db/rollups';
import { USAGE_CLASSES } from '../usage';

export interface AccountMoney {
  balance: number;
  held: number;
}
export interface KeyMoney {
  quota: number | null;
  used: number;
  held: number;
  /** What its budget has left this period (held money not deducted), or null: no budget. */
  budgetLeft: number | null;
}

const keyMoney = (k: Record<string, unknown>, now: number): KeyMoney => ({
  quota: k.quota_micros === null ? null : Number(k.quota_micros),
  used: Number(k.used_micros),
  held: Number(k.held_micros),
  budgetLeft: budgetLeftOf(k, now),
});

/** What writing a batch needs from the database, row locks taken where it reads. */
export interface SettlementTx {
  aliveLeases(ids: string[]): Promise<Set<string>> | Set<string>;
  /** The requests among these whose usage record is already written (asked only when a batch is tried again). */
  recorded(requestIds: string[]): Promise<Set<string>> | Set<string>;
  /** Deletes the checkpoint rows of these requests; returns the ids that had one. */
  takeCheckpoints(requestIds: string[]): Promise<Set<string>> | Set<string>;
  accounts(ids: number[]): Promise<Map<number, AccountMoney>> | Map<number, AccountMoney>;
  keys(ids: number[]): Promise<Map<number, KeyMoney>> | Map<number, KeyMoney>;
  charge(accountId: number, charged: number, released: number): Promise<void> | void;
  spend(keyId: number, charged: number, released: number): Promise<void> | void;
  shrinkLease(id: string, amount: number): Promise<void> | void;
  insert(table: 'ledger' | 'usage_records', rows: Record<string, unknown>[]): Promise<void> | void;
  /** Adds rollup rows (db/rollups.ts: one per group, summed in memory) to the daily rollups. */
  rollup(rows: Record<string, unknown>[]): Promise<void> | void;
}

export async function withSettlementTx<T>(db: Knex, work: (tx: SettlementTx) => Promise<T>): Promise<T> {
  const dialect = dialectOf(db);
  if (dialect === 'sqlite') return sqlite(db, work);
  if (dialect === 'mysql')
    return transact(db, async (trx) => work(mysqlTx(trx, (await trx.client.acquireConnection()) as MysqlConn)));
  return transact(db, (trx) => work(knexTx(trx)));
}

function knexTx(trx: Knex.Transaction): SettlementTx {
  return {
    async aliveLeases(ids) {
      if (!ids.length) return new Set();
      return new Set((await trx('leases').whereIn('id', ids).forUpdate().select('id')).map((r) => String(r.id)));
    },
    async recorded(ids) {
      const rows = await trx('usage_records').whereIn('request_id', ids).select('request_id');
      return new Set(rows.map((r) => String(r.request_id)));
    },
    async takeCheckpoints(ids) {
      if (!ids.length) return new Set();
      const present = new Set(
        (await trx('holds').whereIn('request_id', ids).forUpdate().select('request_id')).map((r) =>
          String(r.request_id),
        ),
      );
      if (present.size)
        await trx('holds')
          .whereIn('request_id', [...present])
          .del();
      return present;
    },
    async accounts(ids) {
      const rows = await trx('accounts').whereIn('id', ids).forUpdate().select('id', 'balance_micros', 'held_micros');
      return new Map(
        rows.map((a) => [Number(a.id), { balance: Number(a.balance_micros), held: Number(a.held_micros) }]),
      );
    },
    async keys(ids) {
      const rows = await trx('api_keys')
        .whereIn('id', ids)
        .forUpdate()
        .select('id', 'quota_micros', 'used_micros', 'held_micros', ...BUDGET_COLUMNS);
      const now = Date.now();
      return new Map(rows.map((k) => [Number(k.id), keyMoney(k, now)]));
    },
    async charge(id, charged, released) {
      await trx('accounts')
        .where('id', id)
        .update({
          balance_micros: trx.raw('balance_micros - ?', [charged]),
          held_micros: trx.raw('held_micros - ?', [released]),
        });
    },
    async spend(id, charged, released) {
      await spendKey(trx, id, charged, released, Date.now());
    },
    async shrinkLease(id, amount) {
      await trx('leases').where('id', id).decrement('amount_micros', amount);
    },
    async insert(table, rows) {
      for (let i = 0; i < rows.length; i += 200) await trx(table).insert(rows.slice(i, i + 200));
    },
    rollup: (rows) => addRollups(trx, rows),
  };
}

// -----------------------------------------------------------------------------------------------------------------
// MySQL: the batch's INSERTs as prepared statements on the transaction's connection

/** What mysql2's (callback) connection offers: `execute` prepares a statement once per connection and SQL text. */
interface MysqlConn {
  execute(sql: string, values: unknown[], cb: (err: Error | null) => void): unknown;
}

const execute = (conn: MysqlConn, sql: string, values: unknown[]) =>
  new Promise<void>((resolve, reject) => conn.execute(sql, values, (e) => (e ? reject(e) : resolve())));

/** Rows per INSERT at most (128 rows of usage records are ~3,500 placeholders, far below MySQL's 65,535). */
const MYSQL_ROWS = 128;

/**
 * The row counts a batch is inserted in on MySQL: as many MYSQL_ROWS as fit, then the rest in powers of two (45 rows:
 * 32, 8, 4, 1). mysql2 keeps every statement a connection prepares, each with a definition object per placeholder,
 * and an INSERT of n rows is a statement of its own: with any count from 1 to 100 a connection came to hold about a
 * hundred statements per table, some 125,000 placeholder definitions for usage records alone. Powers of two bound it
 * to eight statements per table, for a few more round trips per batch (a batch is written every flush_ms).
 */
export function mysqlParts(n: number, max = MYSQL_ROWS): number[] {
  const out: number[] = [];
  for (; n >= max; n -= max) out.push(max);
  let p = 1;
  while (p * 2 < max) p *= 2;
  for (; p >= 1; p /= 2) {
    if (n < p) continue;
    out.push(p);
    n -= p;
  }
  return out;
}

function mysqlTx(trx: Knex.Transaction, conn: MysqlConn): SettlementTx {
  return {
    ...knexTx(trx),
    async insert(table, rows) {
      const cols = table === 'ledger' ? LEDGER : USAGE;
      const one = `(${cols.map(() => '?').join(', ')})`;
      let i = 0;
      for (const n of mysqlParts(rows.length)) {
        const part = rows.slice(i, (i += n));
        const sql = `INSERT INTO ${table} (${cols.join(', ')}) VALUES ${Array(n).fill(one).join(', ')}`;
        await execute(
          conn,
          sql,
          part.flatMap((r) => cols.map((c) => value(r[c]))),
        );
      }
    },
    async rollup(rows) {
      let i = 0;
      for (const n of mysqlParts(rows.length, Math.min(MYSQL_ROWS, ROLLUP_BATCH))) {
        const part = rows.slice(i, (i += n));
        await execute(conn, rollupUpsertSql('mysql', n), part.flatMap(rollupBindings));
      }
    },
  };
}

/** A value as a driver binds it: undefined is NULL, a boolean 0 or 1. */
const value = (v: unknown) => (v === undefined ? null : typeof v === 'boolean' ? Number(v) : v);

// -----------------------------------------------------------------------------------------------------------------
// SQLite: prepared statements on the raw better-sqlite3 connection

interface Db {
  prepare(sql: string): Statement;
  exec(sql: string): void;
}
interface Statement {
  get(...params: unknown[]): Record<string, unknown> | undefined;
  run(...params: unknown[]): unknown;
}

const LEDGER = [
  'account_id',
  'kind',
  'amount_micros',
  'balance_after',
  'ref',
  'key_id',
  'model',
  'prompt_tokens',
  'completion_tokens',
  'note',
  'uncovered_micros',
  'created_at',
];
const USAGE = [
  'request_id',
  'account_id',
  'key_id',
  'model',
  'provider',
  'endpoint',
  'status',
  ...USAGE_CLASSES.map((c) => c.column),
  'counted',
  'cost_micros',
  'latency_ms',
  'ttfb_ms',
  'created_at',
  'held_micros',
  'held_prompt_tokens',
  'held_output_tokens',
];
const insertSql = (table: string, cols: string[]) =>
  `INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`;

const prepared = new WeakMap<Db, ReturnType<typeof prepare>>();

function prepare(conn: Db) {
  return {
    lease: conn.prepare('SELECT id FROM leases WHERE id = ?'),
    recorded: conn.prepare('SELECT 1 FROM usage_records WHERE request_id = ?'),
    checkpoint: conn.prepare('DELETE FROM holds WHERE request_id = ?'),
    account: conn.prepare('SELECT balance_micros, held_micros FROM accounts WHERE id = ?'),
    key: conn.prepare(
      `SELECT quota_micros, used_micros, held_micros, ${BUDGET_COLUMNS.join(', ')} FROM api_keys WHERE id = ?`,
    ),
    charge: conn.prepare(
      'UPDATE accounts SET balance_micros = balance_micros - ?, held_micros = held_micros - ? WHERE id = ?',
    ),
    spend: conn.prepare(
      `UPDATE api_keys SET used_micros = used_micros + ?, held_micros = held_micros - ?, ${BUDGET_SPEND_SQL} WHERE id = ?`,
    ),
    shrink: conn.prepare('UPDATE leases SET amount_micros = amount_micros - ? WHERE id = ?'),
    ledger: conn.prepare(insertSql('ledger', LEDGER)),
    usage: conn.prepare(insertSql('usage_records', USAGE)),
    rollup: conn.prepare(rollupUpsertSql('sqlite', 1)),
  };
}

function sqliteTx(conn: Db): SettlementTx {
  let s = prepared.get(conn);
  if (!s) prepared.set(conn, (s = prepare(conn)));
  const st = s;
  return {
    aliveLeases: (ids) => new Set(ids.filter((id) => st.lease.get(id))),
    recorded: (ids) => new Set(ids.filter((id) => st.recorded.get(id))),
    takeCheckpoints: (ids) =>
      new Set(ids.filter((id) => ((st.checkpoint.run(id) as { changes: number }).changes ?? 0) > 0)),
    accounts(ids) {
      const out = new Map<number, AccountMoney>();
      for (const id of ids) {
        const r = st.account.get(id);
        if (r) out.set(id, { balance: Number(r.balance_micros), held: Number(r.held_micros) });
      }
      return out;
    },
    keys(ids) {
      const out = new Map<number, KeyMoney>();
      for (const id of ids) {
        const r = st.key.get(id);
        if (r) out.set(id, keyMoney(r, Date.now()));
      }
      return out;
    },
    charge: (id, charged, released) => void st.charge.run(charged, released, id),
    spend: (id, charged, released) => void st.spend.run(charged, released, ...spendBindings(Date.now(), charged), id),
    shrinkLease: (id, amount) => void st.shrink.run(amount, id),
    insert(table, rows) {
      const [stmt, cols] = table === 'ledger' ? [st.ledger, LEDGER] : [st.usage, USAGE];
      for (const r of rows) stmt.run(...cols.map((c) => value(r[c])));
    },
    rollup(rows) {
      for (const r of rows) st.rollup.run(...rollupBindings(r));
    },
  };
}

/** Busy: another process holds the write lock past busy_timeout; the batch is simply tried again. */
const busy = (e: unknown) => /^SQLITE_BUSY/.test(String((e as { code?: string }).code));

async function sqlite<T>(db: Knex, work: (tx: SettlementTx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const conn = (await db.client.acquireConnection()) as Db;
    try {
      conn.exec('BEGIN IMMEDIATE');
      try {
        const out = await work(sqliteTx(conn));
        conn.exec('COMMIT');
        return out;
      } catch (e) {
        conn.exec('ROLLBACK');
        throw e;
      }
    } catch (e) {
      if (attempt >= 6 || !busy(e)) throw e;
    } finally {
      db.client.releaseConnection(conn);
    }
    await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * attempt));
  }
}
