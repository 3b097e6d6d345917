/**
 * Database connection from DATABASE_URL: `mysql://user:pass@host:port/db` (MySQL / MariaDB through mysql2),
 * `postgres://user:pass@host:port/db` (PostgreSQL through pg; also `postgresql://`) or `sqlite:<path>` (embedded,
 * better-sqlite3; the default is sqlite:./data/switchyard.db).
 * Money columns are BIGINT micro-USD, kept below 2^53 so every driver returns plain numbers (pg is told to parse
 * int8 as a number, below); times are epoch milliseconds. What else differs between the three: ./dialect.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { migrationSource } from './migrations';
import { isDuplicateKey, isTransientConflict } from './dialect';
import { sqliteClient } from './sqlite';

export { dialectOf, isDatabaseDown, isDuplicateKey, type Dialect } from './dialect';

export const DEFAULT_DATABASE_URL = 'sqlite:./data/switchyard.db';

/**
 * How long a MySQL or PostgreSQL query may take before it is abandoned (DATABASE_QUERY_TIMEOUT_MS; 0: no limit). A server that
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
      client: sqliteClient(),
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
    smallMysqlCaches();
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
        maxPreparedStatements: MYSQL_STATEMENTS,
      },
      // ...give up on a query after DATABASE_QUERY_TIMEOUT_MS...
      pool: { min: 0, max: 10, afterCreate: limitQueries(queryTimeout(o)) },
      // ...and wait at most 8 s for a pooled connection (knex's default is 60 s).
      acquireConnectionTimeout: 8_000,
      migrations,
    };
  }
  if (url.startsWith('postgres:') || url.startsWith('postgresql:')) return pgConfig(new URL(url), queryTimeout(o));
  throw new Error(
    'DATABASE_URL must start with sqlite:, mysql:// or postgres:// (for example sqlite:./data/switchyard.db, ' +
      'mysql://user:password@127.0.0.1:3306/switchyard or postgres://user:password@127.0.0.1:5432/switchyard)',
  );
}

/**
 * Statements a MySQL connection keeps prepared: only the settlement batches' are (`execute`, settlementTx.ts: at
 * most eight sizes of INSERT per table and of the rollups' upsert), knex's queries are not. mysql2's caches are
 * lru.min LRUs that allocate four arrays of their whole capacity when made: at its defaults (16,000 statements per
 * connection, 15,000 row parsers per process) 512 KB on every pooled connection and 480 KB more, measured as 2.5 MB
 * of the old generation of an idle gateway on MariaDB (heap snapshot: four connections), 5.5 MB once the pool's ten
 * are open. A statement or parser dropped from a full cache is only prepared or compiled again.
 */
export const MYSQL_STATEMENTS = 64;
export const MYSQL_PARSERS = 1_000;

/** The process's mysql2 row-parser cache at MYSQL_PARSERS (mysql2 is loaded only when a MySQL URL is used). */
function smallMysqlCaches(): void {
  (require('mysql2') as typeof import('mysql2')).setMaxParserCache(MYSQL_PARSERS);
}

/** node-postgres' OIDs of the types that hold whole numbers: int8 (BIGINT, COUNT) and numeric (SUM of a BIGINT). */
const PG_INT8 = 20;
const PG_NUMERIC = 1700;

/**
 * PostgreSQL, with the protections the MySQL branch has. int8 is read as a JS number (node-postgres' default is a
 * string, to keep values past 2^53; ours stay below, see the top of this file), per connection through `types`, so
 * nothing else in the process changes; numeric too, which is what SUM of a BIGINT returns.
 */
function pgConfig(u: URL, timeoutMs: number): Knex.Config {
  const builtin = pgTypes();
  const getTypeParser = (oid: number, format?: string) =>
    oid === PG_INT8 || oid === PG_NUMERIC ? (v: string) => Number(v) : builtin.getTypeParser(oid, format as 'text');
  return {
    client: 'pg',
    connection: {
      host: u.hostname || '127.0.0.1',
      port: Number(u.port || 5432),
      user: decodeURIComponent(u.username || 'postgres'),
      password: decodeURIComponent(u.password),
      database: decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres',
      types: { getTypeParser },
      // A database that is down must fail a request in seconds, not hang it: connect within 5 s...
      connectionTimeoutMillis: 5_000,
      // ...and give up on a query after DATABASE_QUERY_TIMEOUT_MS: the server cancels it (statement_timeout,
      // 57014)... and if the server does not answer at all (frozen, partitioned), the client stops waiting a
      // second later (query_timeout) and the connection is dropped (limitPgQueries).
      ...(timeoutMs > 0 && { statement_timeout: timeoutMs, query_timeout: timeoutMs + 1_000 }),
      application_name: 'switchyard',
    },
    pool: { min: 0, max: 10, afterCreate: limitPgQueries },
    // ...and wait at most 8 s for a pooled connection (knex's default is 60 s).
    acquireConnectionTimeout: 8_000,
    migrations: { migrationSource, tableName: 'knex_migrations' },
  };
}

/** pg's own type table, loaded only when PostgreSQL is used. */
function pgTypes(): { getTypeParser: (oid: number, format?: 'text' | 'binary') => (v: string) => unknown } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('pg').types;
}

/** What knex's pg dialect gets from node-postgres: a Client, whose socket is `connection.stream`. */
interface PgConnection {
  query: (...args: unknown[]) => unknown;
  connection: { stream: { destroy(): void } };
}

/**
 * A query that ran out of query_timeout still occupies its connection (node-postgres keeps waiting for the answer
 * and queues the next query behind it): close the socket, so the pool (which sees the connection end) opens a new one.
 */
function limitPgQueries(conn: PgConnection, done: (err: Error | null, conn: unknown) => void): void {
  const query = conn.query.bind(conn);
  conn.query = (...args: unknown[]) => {
    const last = args.length - 1;
    const cb = args[last];
    if (typeof cb === 'function')
      args[last] = (err: Error | null, ...rest: unknown[]) => {
        if (err?.message === 'Query read timeout') conn.connection.stream.destroy();
        return cb(err, ...rest);
      };
    return query(...args);
  };
  done(null, conn);
}

/** What knex's mysql2 dialect calls on a connection (`query(options, bindings, callback)`), and settlementTx's `execute`. */
interface MysqlConnection {
  query: MysqlCall;
  execute?: MysqlCall;
  destroy(): void;
}
type MysqlCall = (
  options: string | { sql: string; timeout?: number },
  values?: unknown,
  cb?: (err: (Error & { code?: string }) | null, ...rest: unknown[]) => void,
) => unknown;

/**
 * Gives every query on a new connection mysql2's own time limit (the prepared statements of `execute` too). A query
 * that runs out of it fails with PROTOCOL_SEQUENCE_TIMEOUT (isDatabaseDown: a 503) and its connection is destroyed —
 * the late answer of a server that comes back would otherwise be read by the next query — so the pool opens a new one.
 */
function limitQueries(ms: number) {
  return (conn: MysqlConnection, done: (err: Error | null, conn: unknown) => void) => {
    if (ms > 0) {
      conn.query = limited(conn, conn.query.bind(conn), ms);
      if (conn.execute) conn.execute = limited(conn, conn.execute.bind(conn), ms);
    }
    done(null, conn);
  };
}

/** A pg connection's settings without the per-query time limits (for migrations). */
function unlimited(connection: Knex.Config['connection']): Knex.Config['connection'] {
  const { statement_timeout: _s, query_timeout: _q, ...rest } = connection as Record<string, unknown>;
  return rest as Knex.Config['connection'];
}

function limited(conn: MysqlConnection, call: MysqlCall, ms: number): MysqlCall {
  return (options, values, cb) => {
    const withLimit = typeof options === 'string' ? { sql: options, timeout: ms } : { timeout: ms, ...options };
    if (typeof values === 'function') [values, cb] = [undefined, values as typeof cb];
    return call(withLimit, values, (err, ...rest) => {
      if (err?.code === 'PROTOCOL_SEQUENCE_TIMEOUT') conn.destroy();
      cb?.(err, ...rest);
    });
  };
}

export function connect(url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL, o: ConnectOptions = {}): Knex {
  const config = knexConfig(url, o);
  if (url.startsWith('sqlite:')) {
    const file = (config.connection as { filename: string }).filename;
    if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  }
  return knex(config);
}

/**
 * Applies the pending migrations. On MySQL and PostgreSQL they run on connections of their own, without the query
 * time limit: a migration may rewrite a large table.
 */
export async function migrate(db: Knex): Promise<string[]> {
  const config = db.client.config as Knex.Config;
  const own =
    config.client === 'mysql2'
      ? knex({ ...config, pool: { min: 0, max: 4 } })
      : config.client === 'pg'
        ? knex({ ...config, connection: unlimited(config.connection), pool: { min: 0, max: 4 } })
        : db;
  try {
    const [, applied] = (await own.migrate.latest()) as [number, string[]];
    return applied;
  } finally {
    if (own !== db) await own.destroy();
  }
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

/** A unique key was violated (see isDuplicateKey in ./dialect.ts). */
export const isUniqueViolation = isDuplicateKey;

/** Runs a transaction, again (a few times, after a short random pause) when it lost a lock conflict. */
export async function transact<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>, attempts = 6): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await db.transaction(work);
    } catch (e) {
      if (i >= attempts || !isTransientConflict(e)) throw e;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * i));
    }
  }
}
