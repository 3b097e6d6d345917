/** Migrations are listed here (not discovered from disk) so they run the same from src/ under tsx and from dist/. */
import type { Knex } from 'knex';
import * as m001 from './001_accounts_keys_ledger';
import * as m002 from './002_holds_usage_limits';
import * as m003 from './003_console';

const migrations: Record<string, Knex.Migration> = {
  '001_accounts_keys_ledger': m001,
  '002_holds_usage_limits': m002,
  '003_console': m003,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};
