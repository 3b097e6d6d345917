/** The integration run's own database on a MySQL or PostgreSQL server (globalSetup creates it, globalTeardown drops it). */
import type { Knex } from 'knex';
import { connect, knexConfig } from '../../src/db';

export const RUN_PREFIX = 'switchyard_it_';

/** The database server a URL names, as the gateway reads it (src/db knexConfig); null for an SQLite file. */
export function serverOf(url: string): 'mysql' | 'pg' | null {
  const client = knexConfig(url).client;
  return client === 'mysql2' ? 'mysql' : client === 'pg' ? 'pg' : null;
}

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
  const dialect = serverOf(url) ?? 'pg';
  const server = dialect === 'pg' ? connect(withDatabase(url, 'postgres')) : connect(url);
  try {
    await fn(server, dialect);
  } finally {
    await server.destroy();
  }
}
