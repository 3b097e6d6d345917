/**
 * DATABASE_URL → knex configuration (the PostgreSQL branch: where it connects, its time and pool limits, int8 read
 * as a number) and the dialect helpers that tell the drivers' errors apart. No database is needed: the integration
 * suite runs the same code against real ones (`make integration-pg`).
 */
import knex from 'knex';
import { knexConfig, DEFAULT_QUERY_TIMEOUT_MS, MYSQL_PARSERS, MYSQL_STATEMENTS } from '../../src/db';
import { dialectOf, isDatabaseDown, isDuplicateKey, isTransientConflict, likeOperator } from '../../src/db/dialect';
import { ROLLUP_BATCH } from '../../src/db/rollups';
import { mysqlParts } from '../../src/billing/settlementTx';

type PgConnection = {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  connectionTimeoutMillis: number;
  statement_timeout?: number;
  query_timeout?: number;
  types: { getTypeParser: (oid: number, format?: string) => (v: string) => unknown };
};

const pg = (url: string, o = {}) => {
  const c = knexConfig(url, o);
  return { c, conn: c.connection as PgConnection };
};

describe('knexConfig: PostgreSQL', () => {
  const saved = process.env.DATABASE_QUERY_TIMEOUT_MS;
  afterEach(() => {
    if (saved === undefined) delete process.env.DATABASE_QUERY_TIMEOUT_MS;
    else process.env.DATABASE_QUERY_TIMEOUT_MS = saved;
  });

  test('postgres:// and postgresql:// select pg, with host, port, role, password (URL-decoded) and database', () => {
    for (const scheme of ['postgres', 'postgresql']) {
      const { c, conn } = pg(`${scheme}://sw%40app:p%3Ass%2Fw@db.internal:6543/switch%20yard`);
      expect(c.client).toBe('pg');
      expect(conn).toMatchObject({
        host: 'db.internal',
        port: 6543,
        user: 'sw@app',
        password: 'p:ss/w',
        database: 'switch yard',
      });
    }
  });

  test('defaults: port 5432, role postgres, no password', () => {
    const { conn } = pg('postgres://127.0.0.1/test');
    expect(conn).toMatchObject({ host: '127.0.0.1', port: 5432, user: 'postgres', password: '', database: 'test' });
  });

  test('the same protections as MySQL: connect within 5 s, a query limit, at most 10 connections, 8 s to get one', () => {
    delete process.env.DATABASE_QUERY_TIMEOUT_MS;
    const { c, conn } = pg('postgres://postgres@127.0.0.1:5432/test');
    expect(conn.connectionTimeoutMillis).toBe(5_000);
    // The server cancels the statement; the client stops waiting a second later if the server never answers.
    expect(conn.statement_timeout).toBe(DEFAULT_QUERY_TIMEOUT_MS);
    expect(conn.query_timeout).toBe(DEFAULT_QUERY_TIMEOUT_MS + 1_000);
    expect(c.pool).toMatchObject({ min: 0, max: 10 });
    expect(c.acquireConnectionTimeout).toBe(8_000);
  });

  test('DATABASE_QUERY_TIMEOUT_MS sets the query limit; 0 (and the CLI) means none; a bad value is refused', () => {
    process.env.DATABASE_QUERY_TIMEOUT_MS = '2000';
    expect(pg('postgres://h/db').conn).toMatchObject({ statement_timeout: 2000, query_timeout: 3000 });
    process.env.DATABASE_QUERY_TIMEOUT_MS = '0';
    expect(pg('postgres://h/db').conn.statement_timeout).toBeUndefined();
    expect(pg('postgres://h/db').conn.query_timeout).toBeUndefined();
    process.env.DATABASE_QUERY_TIMEOUT_MS = '2000';
    expect(pg('postgres://h/db', { queryTimeoutMs: 0 }).conn.statement_timeout).toBeUndefined();
    process.env.DATABASE_QUERY_TIMEOUT_MS = 'soon';
    expect(() => pg('postgres://h/db')).toThrow(/DATABASE_QUERY_TIMEOUT_MS must be a whole number/);
  });

  test('int8 (BIGINT, COUNT) and numeric (SUM of a BIGINT) are read as numbers; other types as pg reads them', () => {
    const { getTypeParser } = pg('postgres://h/db').conn.types;
    expect(getTypeParser(20)('9007199254740991')).toBe(9007199254740991);
    expect(getTypeParser(20)('-400')).toBe(-400);
    expect(getTypeParser(1700)('123456789012')).toBe(123456789012);
    expect(getTypeParser(23)('42')).toBe(42); // int4: pg's own parser
    expect(getTypeParser(16)('t')).toBe(true); // bool
    expect(getTypeParser(25)('hello')).toBe('hello'); // text
  });

  test('an unknown scheme is refused with a message naming all three databases', () => {
    expect(() => knexConfig('mongodb://h/db')).toThrow(/sqlite:.*mysql:\/\/.*postgres:\/\//);
    expect(() => knexConfig('pg://h/db')).toThrow(/DATABASE_URL must start with sqlite:, mysql:\/\/ or postgres:\/\//);
  });
});

describe('knexConfig: MySQL', () => {
  test("mysql2's caches are sized for what the gateway prepares, not its defaults (allocated whole: 512 KB a connection)", () => {
    const mysql2 = require('mysql2') as typeof import('mysql2');
    const parsers = jest.spyOn(mysql2, 'setMaxParserCache');
    try {
      const c = knexConfig('mysql://u:p@127.0.0.1:3306/db');
      expect((c.connection as { maxPreparedStatements: number }).maxPreparedStatements).toBe(MYSQL_STATEMENTS);
      expect(parsers).toHaveBeenCalledWith(MYSQL_PARSERS);
    } finally {
      parsers.mockRestore();
    }
    // room for every statement the settlement batches prepare (settlementTx.ts): each size of INSERT into the ledger
    // and the usage records, and each size of the rollups' upsert (at most ROLLUP_BATCH rows a part)
    const sizes = (max?: number) =>
      new Set(Array.from({ length: 2_000 }, (_, i) => mysqlParts(i + 1, max)).flat()).size;
    expect(MYSQL_STATEMENTS).toBeGreaterThanOrEqual(2 * sizes() + sizes(ROLLUP_BATCH));
  });
});

describe('dialect helpers', () => {
  test('dialectOf names each knex client', async () => {
    const dbs = [knex(knexConfig('sqlite::memory:')), knex({ client: 'mysql2' }), knex(knexConfig('postgres://h/db'))];
    try {
      expect(dbs.map(dialectOf)).toEqual(['sqlite', 'mysql', 'pg']);
      expect(dbs.map(likeOperator)).toEqual(['like', 'like', 'ilike']);
    } finally {
      await Promise.all(dbs.map((d) => d.destroy()));
    }
  });

  test('a duplicate key on each database, and nothing else', () => {
    for (const code of ['ER_DUP_ENTRY', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY', '23505'])
      expect(isDuplicateKey({ code })).toBe(true);
    for (const code of ['23503', 'SQLITE_CONSTRAINT_FOREIGNKEY', 'ER_NO_REFERENCED_ROW_2', undefined])
      expect(isDuplicateKey({ code })).toBe(false);
    expect(isDuplicateKey(null)).toBe(false);
  });

  test('lock conflicts worth running again: deadlocks, serialization failures, lock waits, SQLite busy', () => {
    for (const code of ['40P01', '40001', '55P03', 'ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT', 'SQLITE_BUSY'])
      expect(isTransientConflict({ code })).toBe(true);
    for (const code of ['23505', '42P01', 'ER_DUP_ENTRY']) expect(isTransientConflict({ code })).toBe(false);
  });

  test('PostgreSQL down, restarting, frozen or out of connections is "down" (a 503); a wrong query is not', () => {
    const down = [
      { code: 'ECONNREFUSED' },
      { code: '57P01' }, // admin shutdown: the server is stopping
      { code: '57P03' }, // starting up
      { code: '53300' }, // too many connections
      { code: '57014' }, // statement_timeout
      { code: '08006' },
      new Error('Connection terminated unexpectedly'),
      new Error('select 1 - Query read timeout'), // knex puts the query in front
      new Error('timeout expired'), // connectionTimeoutMillis
      Object.assign(new Error('Knex: Timeout acquiring a connection.'), { name: 'KnexTimeoutError' }),
    ];
    for (const e of down) expect(isDatabaseDown(e)).toBe(true);
    const wrong = [
      { code: '42703', message: 'column "x" does not exist' },
      { code: '23505', message: 'duplicate key value violates unique constraint' },
      { code: '22003', message: 'select 1 - value out of range for type integer' },
      new Error('select 1 - syntax error at or near "selec"'),
      new Error('a query about a timeout expired somewhere in a string'),
    ];
    for (const e of wrong) expect(isDatabaseDown(e)).toBe(false);
  });
});
