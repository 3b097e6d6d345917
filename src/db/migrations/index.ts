/** Migrations are listed here (not discovered from disk) so they run the same from src/ under tsx and from dist/. */
import type { Knex } from 'knex';
import * as m001 from './001_accounts_keys_ledger';
import * as m002 from './002_holds_usage_limits';
import * as m003 from './003_console';
import * as m004 from './004_leases_usage_classes';
import * as m005 from './005_responses';
import * as m006 from './006_idempotency';
import * as m007 from './007_key_expiry';
import * as m008 from './008_verification';
import * as m009 from './009_card_reversals';
import * as m010 from './010_low_balance';
import * as m011 from './011_registration_address';
import * as m012 from './012_key_budgets';
import * as m013 from './013_login_addresses';
import * as m014 from './014_cache_write_1h';
import * as m015 from './015_images';
import * as m016 from './016_speech';
import * as m017 from './017_moderation_rerank';
import * as m018 from './018_transcription';
import * as m019 from './019_audit_log';
import * as m020 from './020_operators';
import * as m021 from './021_catalog';
import * as m022 from './022_admin_pages';
import * as m023 from './023_operator_oidc';
import * as m024 from './024_refusals';
import * as m025 from './025_usage_rollups';

const migrations: Record<string, Knex.Migration> = {
  '001_accounts_keys_ledger': m001,
  '002_holds_usage_limits': m002,
  '003_console': m003,
  '004_leases_usage_classes': m004,
  '005_responses': m005,
  '006_idempotency': m006,
  '007_key_expiry': m007,
  '008_verification': m008,
  '009_card_reversals': m009,
  '010_low_balance': m010,
  '011_registration_address': m011,
  '012_key_budgets': m012,
  '013_login_addresses': m013,
  '014_cache_write_1h': m014,
  '015_images': m015,
  '016_speech': m016,
  '017_moderation_rerank': m017,
  '018_transcription': m018,
  '019_audit_log': m019,
  '020_operators': m020,
  '021_catalog': m021,
  '022_admin_pages': m022,
  '023_operator_oidc': m023,
  '024_refusals': m024,
  '025_usage_rollups': m025,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};
