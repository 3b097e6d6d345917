import type { Knex } from 'knex';

/** A low-balance alert per account: mailed once when the balance falls below the threshold, re-armed above it. */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('accounts', (t) => {
    t.bigInteger('low_balance_micros').nullable();
    t.boolean('low_balance_alerted').notNullable().defaultTo(false);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('accounts', (t) => {
    t.dropColumn('low_balance_alerted');
    t.dropColumn('low_balance_micros');
  });
}
