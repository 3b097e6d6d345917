import type { Knex } from 'knex';

/**
 * 1-hour cache writes, a usage class of their own (Anthropic bills them at 2× input, 5-minute writes at 1.25×):
 * `cache_write_tokens` stays every write, this column the 1-hour part of it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.integer('cache_write_1h_tokens').notNullable().defaultTo(0);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.dropColumn('cache_write_1h_tokens');
  });
}
