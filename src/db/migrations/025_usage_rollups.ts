import type { Knex } from 'knex';
import { ROLLUP_SUMS, rollUpRange } from '../rollups';

/** Usage records summed per range of ids in the backfill: one short statement each, whatever the table's size. */
const BACKFILL_IDS = 50_000;

/**
 * Daily usage rollups (db/rollups.ts): what the usage pages and reports read instead of scanning the usage records,
 * which retention (`usage.retention_days`) may delete. Filled from the records already there, a range of ids at a
 * time; the settlements written from now on add to them in their own transaction.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('usage_rollups', (t) => {
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    /** Epoch ms of the UTC day's midnight. */
    t.bigInteger('day').notNullable();
    t.bigInteger('key_id').unsigned().notNullable();
    t.string('model', 200).notNullable();
    /** '' when the records name no provider (a unique key would never merge NULLs). */
    t.string('provider', 200).notNullable().defaultTo('');
    for (const c of ROLLUP_SUMS) t.bigInteger(c).notNullable().defaultTo(0);
    t.primary(['account_id', 'day', 'key_id', 'model', 'provider']);
    // The operator's reports read every account's days.
    t.index(['day']);
  });
  // A page of one account's records, newest first (the console's request list), read in the index's order: never a
  // sort of all the account's records, however many it has.
  await db.schema.alterTable('usage_records', (t) => {
    t.index(['account_id', 'id'], 'usage_records_account_id_id_index');
  });
  const [{ max }] = (await db('usage_records').max({ max: 'id' })) as { max: unknown }[];
  const last = Number(max ?? 0);
  for (let after = 0; after < last; after += BACKFILL_IDS) await rollUpRange(db, after, after + BACKFILL_IDS);
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.dropIndex(['account_id', 'id'], 'usage_records_account_id_id_index');
  });
  await db.schema.dropTableIfExists('usage_rollups');
}
