import type { Knex } from 'knex';

/** Transcriptions and translations: their usage class, seconds of audio, gets its column. */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.integer('audio_seconds').notNullable().defaultTo(0);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.dropColumn('audio_seconds');
  });
}
