/**
 * Database connection from DATABASE_URL: `mysql://user:pass@host:port/db` (MySQL / MariaDB through mysql2) or
 * `sqlite:<path>` (embedded, better-sqlite3; the default is sqlite:./data/switchyard.db).
 * Money columns are BIGINT micro-USD, kept below 2^53 so both drivers return plain numbers; times are epoch milliseconds.
 */
import fs from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { migrationSource } from './migrations';

export const DEFAULT_DATABASE_URL = 'sqlite:./data/switchyard.db';

/**
 * How long a MySQL query may take before it is abandoned (DATABASE_QUERY_TIMEOUT_MS; 0: no limit). A server that
 * accepts connections and never answers (frozen, or a network partition: no reset ever comes) would otherwise hold
 * a request, and its pooled connection, forever. Generous: a lock wait or a large console listing stays well below.
 */
export const DEFAULT_QUERY_TIMEOUT_MS = 10_000;

export interface ConnectOptions {
  /** See DEFAULT_QUERY_TIMEOUT_MS; the CLI passes 0 (an operator's report may take long, and can be interrupted). */
  queryTimeoutMs?: number;
}

function queryTimeout(o: ConnectOptions): number {
  const env = process.env.DATABASE_QUERY_TIMEOUT_MS;
  const ms = o.queryTimeoutMs ?? (env === undefined || env === '' ? DEFAULT_QUERY_TIMEOUT_MS : Number(env));
  if (!Number.isInteger(ms) || ms < 0)
    throw new Error(`DATABASE_QUERY_TIMEOUT_MS must be a whole number of milliseconds (0: no limit), not '${env}'`);
  return ms;
}

export function knexConfig(
  url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
  o: ConnectOptions = {},
): Knex.Config {
  const migrations = { migrationSource, tableName: 'knex_migrations' };
  if (url.startsWith('sqlite:')) {
    const filename = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') || DEFAULT_DATABASE_URL.slice(7);
    return {
      client: 'better-sqlite3',
      connection: { filename },
      useNullAsDefault: true,
      migrations,
      pool: {
        afterCreate: (conn: { pragma: (s: string) => void }, done: (err: Error | null, conn: unknown) => void) => {
          conn.pragma('journal_mode = WAL');
          // In WAL mode NORMAL loses nothing when the process dies (only, at worst, the last commits on a power
          // failure), and a commit no longer waits for an fsync: settlements are written while requests are served.
          conn.pragma('synchronous = NORMAL');
          conn.pragma('foreign_keys = ON');
          conn.pragma('busy_timeout = 5000');
          done(null, conn);
        },
      },
    };
  }
  if (url.startsWith('mysql:') || url.startsWith('mariadb:')) {
    const u = new URL(url);
    return {
      client: 'mysql2',
      connection: {
        host: u.hostname || '127.0.0.1',
        port: Number(u.port || 3306),
        user: decodeURIComponent(u.username || 'root'),
        password: decodeURIComponent(u.password),
        database: u.pathname.replace(/^\//, ''),
        supportBigNumbers: true,
        bigNumberStrings: false,
        decimalNumbers: true,
        charset: 'utf8mb4',
        // A database that is down must fail a request in seconds, not hang it: connect within 5 s (a loaded
        // server can take a few seconds to accept; mysql2's default is 10 s)...
        connectTimeout: 5_000,
      },
      // ...give up on a query after DATABASE_QUERY_TIMEOUT_MS...
      pool: { min: 0, max: 10, afterCreate: limitQueries(queryTimeout(o)) },
      // ...and wait at most 8 s for a pooled connection (knex's default is 60 s).
      acquireConnectionTimeout: 8_000,
      migrations,
    };
  }
  throw new Error('DATABASE_URL must start with mysql:// or sqlite: (for example sqlite:./data/switchyard.db)');
}

/** What knex's mysql2 dialect calls on a connection (`query(options, bindings, callback)`). */
interface MysqlConnection {
  query(
    options: string | { sql: string; timeout?: number },
    values?: unknown,
    cb?: (err: (Error & { code?: string }) | null, ...rest: unknown[]) => void,
  ): unknown;
  destroy(): void;
}

/**
 * Gives every query on a new connection mysql2's own time limit. A query that runs out of it fails with
 * PROTOCOL_SEQUENCE_TIMEOUT (isDatabaseDown: a 503) and its connection is destroyed — the late answer of a server
 * that comes back would otherwise be read by the next query — so the pool opens a new one.
 */
function limitQueries(ms: number) {
  return (conn: MysqlConnection, done: (err: Error | null, conn: unknown) => void) => {
    if (ms > 0) {
      const query = conn.query.bind(conn);
      conn.query = (options, values, cb) => {
        const withLimit = typeof options === 'string' ? { sql: options, timeout: ms } : { timeout: ms, ...options };
        if (typeof values === 'function') [values, cb] = [undefined, values as typeof cb];
        return query(withLimit, values, (err, ...rest) => {
          if (err?.code === 'PROTOCOL_SEQUENCE_TIMEOUT') conn.destroy();
          cb?.(err, ...rest);
        });
      };
    }
    done(null, conn);
  };
}

export function connect(url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL, o: ConnectOptions = {}): Knex {
  const config = knexConfig(url, o);
  if (config.client === 'better-sqlite3') {
    const file = (config.connection as { filename: string }).filename;
    if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  }
  return knex(config);
}

/** Applies the pending migrations. On MySQL they run on a connection of their own, without the query time limit: a migration may rewrite a large table. */
export async function migrate(db: Knex): Promise<string[]> {
  const config = db.client.config as Knex.Config;
  const own = config.client === 'mysql2' ? knex({ ...config, pool: { min: 0, max: 4 } }) : db;
  try {
    const [, applied] = (await own.migrate.latest()) as [number, string[]];
    return applied;
  } finally {
    if (own !== db) await own.destroy();
  }
}

/** Errors that say the database cannot be reached (down, restarting, refusing connections), not that a query is wrong. */
export function isDatabaseDown(e: unknown): boolean {
  const { code, name, fatal, errno } = (e ?? {}) as { code?: string; name?: string; fatal?: boolean; errno?: number };
  return (
    name === 'KnexTimeoutError' ||
    // mysql2's "Can't add new command when connection is in closed state" (a transaction's ROLLBACK on a connection
    // the server dropped): fatal, with no code and no server error number
    (fatal === true && code === undefined && errno === undefined) ||
    (!!code &&
      [
        'ECONNREFUSED',
        'ECONNRESET',
        'ETIMEDOUT',
        'PROTOCOL_SEQUENCE_TIMEOUT',
        'EHOSTUNREACH',
        'ENOTFOUND',
        'EPIPE',
        'PROTOCOL_CONNECTION_LOST',
        'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
        'ER_SERVER_SHUTDOWN',
        'ER_CON_COUNT_ERROR',
        'SQLITE_CANTOPEN',
        'SQLITE_IOERR',
      ].includes(code))
  );
}

/** Whether the database answers within `timeoutMs`. */
export async function databaseAnswers(db: Knex, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  try {
    return await Promise.race([db.raw('select 1').then(() => true as const), late]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  return code === 'ER_DUP_ENTRY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** Lock conflicts that a transaction can simply run again after (MySQL deadlock / lock wait, SQLite busy). */
function isTransient(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  return (
    code === 'ER_LOCK_DEADLOCK' ||
    code === 'ER_LOCK_WAIT_TIMEOUT' ||
    code === 'SQLITE_BUSY' ||
    code === 'SQLITE_BUSY_SNAPSHOT'
  );
}

/** Runs a transaction, again (a few times, after a short random pause) when it lost a lock conflict. */
export async function transact<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>, attempts = 6): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await db.transaction(work);
    } catch (e) {
      if (i >= attempts || !isTransient(e)) throw e;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * i));
    }
  }
}
