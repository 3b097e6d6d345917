import type { Knex } from 'knex';

/**
 * Idempotency keys of admin operations (grants, adjustments, code batches; `Idempotency-Key`): the first answer,
 * kept 24 h, so that a retry with the same key and the same request gets it again and changes nothing more.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('idempotency_keys', (t) => {
    t.increments('id').primary();
    /** The operation (`grant`, `codes`): one key may be used once per operation. */
    t.string('scope', 40).notNullable();
    t.string('key', 255).notNullable();
    /** SHA-256 of the request the key was first used with: another request with the same key is refused. */
    t.string('fingerprint', 64).notNullable();
    /** The first answer (JSON). */
    t.text('response', 'longtext').notNullable();
    t.bigInteger('created_at').notNullable();
    t.unique(['scope', 'key']);
    t.index(['created_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('idempotency_keys');
}
