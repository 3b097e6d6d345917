/** Migrates the integration database once before any test file runs (DATABASE_URL, or a fresh SQLite file). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, migrate } from '../../src/db';

export default async function globalSetup(): Promise<void> {
  if (!process.env.DATABASE_URL) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-test-'));
    process.env.DATABASE_URL = `sqlite:${path.join(dir, 'test.db')}`;
  }
  const db = connect(process.env.DATABASE_URL);
  try {
    await migrate(db);
  } finally {
    await db.destroy();
  }
}
