/**
 * The statements of a batch of settlements, for the two databases. On SQLite they are prepared once per connection
 * and run synchronously inside BEGIN IMMEDIATE … COMMIT on the connection taken from knex's pool (knex would build
 * and prepare every statement again, which cost more than the rest of a paid request); on MySQL they go through
 * knex in a transaction. The logic that uses them (store.ts writeSettlements) is written once.
 */
import { BUDGET_COLUMNS, BUDGET_SPEND_SQL, budgetLeftOf, spendBindings, spendKey } from './budgets';
import type { Knex } from 'knex';
import { transact } from '../db';
import { dialectOf } from '../db/dialect';
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
  /** Deletes the checkpoint rows of these requests; returns the ids that had one. */
  takeCheckpoints(requestIds: string[]): Promise<Set<string>> | Set<string>;
  accounts(ids: number[]): Promise<Map<number, AccountMoney>> | Map<number, AccountMoney>;
  keys(ids: number[]): Promise<Map<number, KeyMoney>> | Map<number, KeyMoney>;
  charge(accountId: number, charged: number, released: number): Promise<void> | void;
  spend(keyId: number, charged: number, released: number): Promise<void> | void;
  shrinkLease(id: string, amount: number): Promise<void> | void;
  insert(table: 'ledger' | 'usage_records', rows: Record<string, unknown>[]): Promise<void> | void;
}

export async function withSettlementTx<T>(db: Knex, work: (tx: SettlementTx) => Promise<T>): Promise<T> {
  if (dialectOf(db) === 'sqlite') return sqlite(db, work);
  return transact(db, (trx) => work(knexTx(trx)));
}

function knexTx(trx: Knex.Transaction): SettlementTx {
  return {
    async aliveLeases(ids) {
      if (!ids.length) return new Set();
      return new Set((await trx('leases').whereIn('id', ids).forUpdate().select('id')).map((r) => String(r.id)));
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
  };
}

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
  };
}

function sqliteTx(conn: Db): SettlementTx {
  let s = prepared.get(conn);
  if (!s) prepared.set(conn, (s = prepare(conn)));
  const st = s;
  const value = (v: unknown) => (v === undefined ? null : typeof v === 'boolean' ? Number(v) : v);
  return {
    aliveLeases: (ids) => new Set(ids.filter((id) => st.lease.get(id))),
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
