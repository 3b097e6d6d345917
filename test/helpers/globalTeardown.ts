/** Drops the database globalSetup created for this run on a MySQL or PostgreSQL server. */
import { RUN_PREFIX, withServer } from './runDatabase';

export default async function globalTeardown(): Promise<void> {
  const server = process.env.SWITCHYARD_SERVER_URL;
  const name = new URL(process.env.DATABASE_URL ?? 'sqlite:x').pathname.slice(1);
  if (!server || !name.startsWith(RUN_PREFIX)) return;
  await withServer(server, async (s, dialect) => {
    // PostgreSQL refuses to drop a database with sessions open: a child process may not have closed its pool yet
    await s.raw(dialect === 'pg' ? `DROP DATABASE IF EXISTS ${name} WITH (FORCE)` : `DROP DATABASE IF EXISTS ${name}`);
  });
}
