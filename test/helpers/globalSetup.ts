/**
 * Gives the integration suite a database of its own, migrated once before any test file runs. With no DATABASE_URL:
 * a fresh SQLite file. With a MySQL or PostgreSQL URL: a fresh database created on that server for this run (and
 * dropped by globalTeardown), so that rows an earlier run left behind — audit records, operators whose secrets were
 * sealed under another run's key — never decide a test, and two runs on one server do not meet. A database of an
 * earlier run that was killed before its teardown is dropped once it is a day old.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, migrate } from '../../src/db';
import { RUN_PREFIX, serverOf, withDatabase, withServer } from './runDatabase';

const DAY_MS = 24 * 3600_000;

export default async function globalSetup(): Promise<void> {
  if (!process.env.DATABASE_URL) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-test-'));
    process.env.DATABASE_URL = `sqlite:${path.join(dir, 'test.db')}`;
  } else if (serverOf(process.env.DATABASE_URL)) {
    const name = `${RUN_PREFIX}${Date.now()}_${process.pid}`;
    await withServer(process.env.DATABASE_URL, async (server, dialect) => {
      await dropOld(server, dialect);
      await server.raw(`CREATE DATABASE ${name}`);
    });
    process.env.SWITCHYARD_SERVER_URL = process.env.DATABASE_URL; // for globalTeardown
    process.env.DATABASE_URL = withDatabase(process.env.DATABASE_URL, name);
  }
  const db = connect(process.env.DATABASE_URL);
  try {
    await migrate(db);
  } finally {
    await db.destroy();
  }
}

/** Drops the databases of runs that started more than a day ago (their names carry the start time). */
async function dropOld(server: import('knex').Knex, dialect: 'mysql' | 'pg'): Promise<void> {
  const rows =
    dialect === 'mysql'
      ? ((await server.raw('SHOW DATABASES'))[0] as Record<string, string>[]).map((r) => Object.values(r)[0])
      : ((await server.raw('SELECT datname FROM pg_database')).rows as { datname: string }[]).map((r) => r.datname);
  for (const name of rows.filter((n) => n.startsWith(RUN_PREFIX))) {
    const started = Number(name.slice(RUN_PREFIX.length).split('_')[0]);
    if (Date.now() - started > DAY_MS) await server.raw(`DROP DATABASE IF EXISTS ${name}`);
  }
}
