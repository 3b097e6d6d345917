/**
 * What differs between the three databases Switchyard runs on — SQLite (better-sqlite3), MySQL/MariaDB (mysql2) and
 * PostgreSQL (pg) — kept in one place so that queries ask `dialectOf(db)` and error handling asks the helpers below,
 * instead of each file knowing the drivers' client names and error codes.
 */
import type { Knex } from 'knex';

export type Dialect = 'sqlite' | 'mysql' | 'pg';

const CLIENTS: Record<string, Dialect> = {
  'better-sqlite3': 'sqlite',
  sqlite3: 'sqlite',
  mysql2: 'mysql',
  mysql: 'mysql',
  pg: 'pg',
  postgres: 'pg',
  postgresql: 'pg',
};

/**
 * The database behind a knex instance (or transaction), by its driver's name: the SQLite client is a class
 * (./sqlite.ts), the others are named in the configuration.
 */
export function dialectOf(db: Knex | Knex.Transaction): Dialect {
  const c = db.client as { driverName?: string; config: Knex.Config };
  const client = c.driverName ?? String(c.config.client);
  const dialect = CLIENTS[client];
  if (!dialect) throw new Error(`unsupported knex client '${client}'`);
  return dialect;
}

const codeOf = (e: unknown): string | undefined => (e as { code?: string } | null)?.code;

/**
 * A unique or primary key was violated (the row exists already). On PostgreSQL this error also aborts the
 * surrounding transaction: code that goes on after catching it must have run the insert in a savepoint (a nested
 * `trx.transaction`).
 */
export function isDuplicateKey(e: unknown): boolean {
  const code = codeOf(e);
  return (
    code === 'ER_DUP_ENTRY' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    code === '23505'
  );
}

/**
 * Lock conflicts that a transaction can simply run again after: MySQL deadlock / lock wait, SQLite busy,
 * PostgreSQL deadlock (40P01), serialization failure (40001) and lock wait (55P03, lock_timeout).
 */
export function isTransientConflict(e: unknown): boolean {
  const code = codeOf(e);
  return (
    code === 'ER_LOCK_DEADLOCK' ||
    code === 'ER_LOCK_WAIT_TIMEOUT' ||
    code === 'SQLITE_BUSY' ||
    code === 'SQLITE_BUSY_SNAPSHOT' ||
    code === '40P01' ||
    code === '40001' ||
    code === '55P03'
  );
}

const DOWN_CODES = new Set([
  // sockets, any driver
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  // mysql2
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_CON_COUNT_ERROR',
  // better-sqlite3
  'SQLITE_CANTOPEN',
  'SQLITE_IOERR',
  // PostgreSQL SQLSTATEs: connection exceptions (class 08), too many connections, the server shutting down or
  // starting (57P01-57P03), and a statement cancelled by statement_timeout (57014: the MySQL time limit's twin)
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300',
  '57P01',
  '57P02',
  '57P03',
  '57014',
]);

/**
 * What node-postgres says, without a code, when the server went away or never answered: the socket closed under a
 * query, a connection not made within connectionTimeoutMillis ("timeout expired"), query_timeout run out. knex puts
 * the query in front ("select 1 - Query read timeout").
 */
const PG_DOWN_MESSAGES =
  /(?:^| - )(?:Connection terminated|Query read timeout|timeout expired|timeout exceeded when trying to connect|Client was closed and is not queryable|Client has encountered a connection error and is not queryable)/;

/** Errors that say the database cannot be reached (down, restarting, refusing connections), not that a query is wrong. */
export function isDatabaseDown(e: unknown): boolean {
  const { code, name, message, fatal, errno } = (e ?? {}) as {
    code?: string;
    name?: string;
    message?: string;
    fatal?: boolean;
    errno?: number;
  };
  return (
    name === 'KnexTimeoutError' ||
    // mysql2's "Can't add new command when connection is in closed state" (a transaction's ROLLBACK on a connection
    // the server dropped; found by test/cluster, where it was a 500): fatal, with no code and no server error number
    (fatal === true && code === undefined && errno === undefined) ||
    (!!code && DOWN_CODES.has(code)) ||
    (!code && typeof message === 'string' && PG_DOWN_MESSAGES.test(message))
  );
}

/** A case-insensitive LIKE, as MySQL's collation and SQLite's LIKE (for ASCII) already are: ILIKE on PostgreSQL. */
export function likeOperator(db: Knex | Knex.Transaction): 'like' | 'ilike' {
  return dialectOf(db) === 'pg' ? 'ilike' : 'like';
}

/**
 * Inserts one row and returns its generated id. MySQL answers an insert with the id; PostgreSQL only with
 * `RETURNING` (which MySQL does not have, and knex warns about); SQLite with either.
 */
export async function insertId(
  db: Knex | Knex.Transaction,
  table: string,
  row: Record<string, unknown>,
): Promise<number> {
  const insert = db(table).insert(row);
  const [inserted] = (await (dialectOf(db) === 'mysql' ? insert : insert.returning('id'))) as unknown[];
  return Number(typeof inserted === 'object' && inserted !== null ? (inserted as { id: unknown }).id : inserted);
}

const DAY_MS = 86_400_000;

/**
 * The start of the UTC day of an epoch-milliseconds column, as an expression to select and GROUP BY. The day's length
 * is written into the SQL, not bound: PostgreSQL sees two bound parameters ($1 in the select list, $4 in GROUP BY)
 * as two different expressions and refuses the query ("must appear in the GROUP BY clause").
 */
export function utcDayOf(db: Knex | Knex.Transaction, column: string): Knex.Raw {
  return db.raw(`(?? - (?? % ${DAY_MS}))`, [column, column]);
}
