import type { Knex } from 'knex';

export async function up(db: Knex): Promise<void> {
  // Money reserved by requests in flight; available = balance_micros - held_micros.
  await db.schema.alterTable('accounts', (t) => {
    t.bigInteger('held_micros').notNullable().defaultTo(0);
  });
  await db.schema.alterTable('api_keys', (t) => {
    t.bigInteger('held_micros').notNullable().defaultTo(0);
    t.integer('rpm_limit').nullable(); // null: the configuration's default
    t.integer('tpm_limit').nullable();
  });
  // One hold per request in flight: a lease its process renews; an expired one is settled by the sweeper.
  await db.schema.createTable('holds', (t) => {
    t.bigIncrements('id').primary();
    t.string('request_id', 64).notNullable().unique();
    t.string('endpoint', 32).notNullable();
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.bigInteger('key_id').unsigned().notNullable();
    t.string('model', 200).notNullable();
    t.bigInteger('amount_micros').notNullable();
    /** What the request has certainly cost so far (prompt, then generated text), charged if its process dies. */
    t.bigInteger('progress_micros').notNullable().defaultTo(0);
    t.integer('prompt_tokens').notNullable().defaultTo(0);
    t.integer('completion_tokens').notNullable().defaultTo(0);
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['expires_at']);
  });
  // One row per request that reached the gateway's upstream stage.
  await db.schema.createTable('usage_records', (t) => {
    t.bigIncrements('id').primary();
    t.string('request_id', 64).notNullable().unique();
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.bigInteger('key_id').unsigned().notNullable();
    t.string('model', 200).notNullable();
    t.string('provider', 200).nullable();
    t.string('endpoint', 32).notNullable();
    t.integer('status').notNullable();
    t.integer('prompt_tokens').notNullable().defaultTo(0);
    t.integer('completion_tokens').notNullable().defaultTo(0);
    t.string('counted', 16).notNullable(); // upstream | tokenizer | none
    t.bigInteger('cost_micros').notNullable().defaultTo(0);
    t.integer('latency_ms').nullable();
    t.integer('ttfb_ms').nullable();
    t.bigInteger('created_at').notNullable();
    t.index(['account_id', 'created_at']);
    t.index(['key_id', 'created_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('usage_records');
  await db.schema.dropTableIfExists('holds');
  await db.schema.alterTable('api_keys', (t) => {
    t.dropColumn('held_micros');
    t.dropColumn('rpm_limit');
    t.dropColumn('tpm_limit');
  });
  await db.schema.alterTable('accounts', (t) => t.dropColumn('held_micros'));
}
