import type { Knex } from 'knex';

/**
 * Card payments that come back. `card_payments`: which account a Stripe payment intent paid (recorded with the
 * top-up), so a refund or a dispute of it can be found. `card_reversals`: each refund or dispute event taken into
 * account, once (`ref` unique), with what it claimed, what was debited and what became debt. `debt_micros`: what an
 * account owes because its credits were spent before the money went back; while it owes, it is suspended.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('card_payments', (t) => {
    t.string('payment_intent', 100).primary();
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.string('session_id', 200).notNullable();
    t.bigInteger('amount_micros').notNullable();
    t.bigInteger('created_at').notNullable();
  });
  await db.schema.createTable('card_reversals', (t) => {
    t.bigIncrements('id').primary();
    t.string('payment_intent', 100).notNullable().index();
    /** card_refund, dispute, dispute_won */
    t.string('kind', 20).notNullable();
    t.string('ref', 200).notNullable().unique();
    t.bigInteger('claimed_micros').notNullable();
    t.bigInteger('debited_micros').notNullable();
    t.bigInteger('debt_micros').notNullable();
    t.bigInteger('created_at').notNullable();
  });
  await db.schema.alterTable('accounts', (t) => {
    t.bigInteger('debt_micros').notNullable().defaultTo(0);
    t.boolean('suspended_for_debt').notNullable().defaultTo(false);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('accounts', (t) => {
    t.dropColumn('suspended_for_debt');
    t.dropColumn('debt_micros');
  });
  await db.schema.dropTableIfExists('card_reversals');
  await db.schema.dropTableIfExists('card_payments');
}
