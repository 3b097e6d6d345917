import type { Knex } from 'knex';

/**
 * Speech (`POST /v1/audio/speech`): the characters a request had read aloud, a usage class of its own (OpenAI bills
 * tts-1 per million characters).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.integer('characters').notNullable().defaultTo(0);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.dropColumn('characters');
  });
}
