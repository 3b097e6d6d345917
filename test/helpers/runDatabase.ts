/** The integration run's own database on a MySQL or PostgreSQL server (globalSetup creates it, globalTeardown drops it). */
import type { Knex } from 'knex';
import { connect } from '../../src/db';

export const RUN_PREFIX = 'switchyard_it_';

export const isServerUrl = (url: string): boolean => /^(mysql|postgres(ql)?):/.test(url);

/** The same server, another database. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs `fn` on a connection to the server of `url` (PostgreSQL: its `postgres` database, as a database cannot be
 * dropped from a connection to itself). */
export async function withServer(
  url: string,
  fn: (server: Knex, dialect: 'mysql' | 'pg') => Promise<void>,
): Promise<void> {
  const dialect = /^mysql:/.test(url) ? 'mysql' : 'pg';
  const server = dialect === 'pg' ? connect(withDatabase(url, 'postgres')) : connect(url);
  try {
    await fn(server, dialect);
  } finally {
    await server.destroy();
  }
}
