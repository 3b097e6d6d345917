import type { Knex } from 'knex';

/**
 * Speech (`POST /v1/audio/speech`): the characters a request had read aloud, a usage class of its own (OpenAI bills
 * tts-1 per million characters), and the scope `audio`. A key that had every scope there was (what a key gets unless
 * its scopes are chosen) gets the new one too; a key whose scopes were chosen keeps what was chosen.
 *
 * Every scope there was includes `images`: 015 gave it to every key that had all the scopes before it, so such a key
 * gets `audio` here as well, while one whose scopes were chosen without `images` (after 015) stays as chosen.
 */
const BEFORE = ['chat', 'completions', 'embeddings', 'models', 'messages', 'responses', 'images'];

export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.integer('characters').notNullable().defaultTo(0);
  });
  for (const k of await db('api_keys').select('id', 'scopes')) {
    const scopes = String(k.scopes).split(',').filter(Boolean);
    if (BEFORE.every((s) => scopes.includes(s)) && !scopes.includes('audio'))
      await db('api_keys')
        .where('id', k.id)
        .update({ scopes: [...scopes, 'audio'].join(',') });
  }
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.dropColumn('characters');
  });
}
