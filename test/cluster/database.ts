/**
 * The cluster test's database, named by a URL: PostgreSQL (`postgres://`) or MySQL/MariaDB (`mysql://`), created
 * when missing, and reached by the nodes through the test's TCP proxy.
 */
import knex from 'knex';

/** Creates the URL's database when it does not exist, connected to the server's maintenance database. */
export async function createDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!/^\w+$/.test(name)) throw new Error(`the cluster database's name must be letters, digits and _, not '${name}'`);
  const connection = {
    host: u.hostname || '127.0.0.1',
    port: Number(u.port) || undefined,
    user: decodeURIComponent(u.username || (u.protocol.startsWith('postgres') ? 'postgres' : 'root')),
    password: decodeURIComponent(u.password),
  };
  if (u.protocol.startsWith('postgres')) {
    const server = knex({ client: 'pg', connection: { ...connection, database: 'postgres' } });
    try {
      const found = await server.raw('SELECT 1 FROM pg_database WHERE datname = ?', [name]);
      if (!found.rows.length) await server.raw(`CREATE DATABASE "${name}"`);
    } finally {
      await server.destroy();
    }
    return;
  }
  if (u.protocol.startsWith('mysql') || u.protocol.startsWith('mariadb')) {
    const server = knex({ client: 'mysql2', connection });
    try {
      await server.raw(`CREATE DATABASE IF NOT EXISTS \`${name}\``);
    } finally {
      await server.destroy();
    }
    return;
  }
  throw new Error(`CLUSTER_DATABASE_URL must be postgres://... or mysql://..., not ${u.protocol}`);
}

/** The database server's host and port, for the TCP proxy. */
export function tcpTarget(url: string): [string, number] {
  const u = new URL(url);
  return [u.hostname || '127.0.0.1', Number(u.port) || (u.protocol.startsWith('postgres') ? 5432 : 3306)];
}

/** The same database, reached through the proxy on `port`. */
export function throughProxy(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}
