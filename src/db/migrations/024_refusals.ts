import type { Knex } from 'knex';

/**
 * Refused calls of known keys (429 for money or rate, 401 for a disabled or expired key), counted per minute: one
 * row per (account, key, minute, status, reason, operation) whose count every process adds its own batch to. They are
 * not usage records — a refusal reached no upstream and costs nothing — and a row per refusal would let anyone who
 * holds a key with no money turn each cheap 429 into a database write.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('refusals', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('account_id').unsigned().notNullable();
    t.bigInteger('key_id').unsigned().notNullable();
    /** Epoch ms of the minute's start (UTC). */
    t.bigInteger('minute').notNullable();
    t.integer('status').notNullable();
    t.string('reason', 32).notNullable();
    /** The operationId refused (createChatCompletion, createEmbedding...). */
    t.string('endpoint', 64).notNullable();
    t.bigInteger('count').notNullable().defaultTo(0);
    t.unique(['account_id', 'minute', 'key_id', 'status', 'reason', 'endpoint']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('refusals');
}
