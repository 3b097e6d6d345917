import type { Knex } from 'knex';

export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('accounts', (t) => {
    t.bigIncrements('id').primary();
    t.string('email', 320).notNullable().unique();
    t.string('status', 16).notNullable().defaultTo('active');
    t.bigInteger('balance_micros').notNullable().defaultTo(0);
    t.bigInteger('created_at').notNullable();
  });
  await db.schema.createTable('api_keys', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.string('name', 200).nullable();
    t.string('prefix', 16).notNullable();
    t.string('hash', 64).notNullable().unique();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.bigInteger('quota_micros').nullable();
    t.bigInteger('used_micros').notNullable().defaultTo(0);
    t.text('models').nullable(); // JSON array of model ids; null = every model
    t.string('scopes', 200).notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('last_used_at').nullable();
    t.index(['account_id']);
  });
  await db.schema.createTable('ledger', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.string('kind', 20).notNullable();
    t.bigInteger('amount_micros').notNullable();
    t.bigInteger('balance_after').notNullable();
    t.string('ref', 100).nullable(); // request id or payment id
    t.bigInteger('key_id').unsigned().nullable();
    t.string('model', 200).nullable();
    t.integer('prompt_tokens').nullable();
    t.integer('completion_tokens').nullable();
    t.string('note', 500).nullable();
    t.bigInteger('created_at').notNullable();
    t.unique(['ref', 'kind']);
    t.index(['account_id', 'id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('ledger');
  await db.schema.dropTableIfExists('api_keys');
  await db.schema.dropTableIfExists('accounts');
}
