import type { Knex } from 'knex';

/** Key budgets per UTC day, week or month (billing/budgets.ts): the limit, the period, and the current period's spend. */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('api_keys', (t) => {
    t.bigInteger('budget_micros').nullable();
    t.string('budget_period', 8).nullable();
    t.bigInteger('budget_start').notNullable().defaultTo(0);
    t.bigInteger('budget_used_micros').notNullable().defaultTo(0);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('api_keys', (t) => {
    t.dropColumn('budget_used_micros');
    t.dropColumn('budget_start');
    t.dropColumn('budget_period');
    t.dropColumn('budget_micros');
  });
}
