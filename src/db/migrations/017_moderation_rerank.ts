import type { Knex } from 'knex';

/**
 * The scopes every key could use before this migration: a key that had them all was made to use everything. They
 * include `images` and `audio`: 015 and 016 gave them to every key that had all the scopes before each, so such a key
 * gets moderations and rerank here as well, while one whose scopes were chosen without them stays as chosen.
 */
const BEFORE = ['chat', 'completions', 'embeddings', 'models', 'messages', 'responses', 'images', 'audio'];
const NEW = ['moderations', 'rerank'];

/**
 * Moderations and rerank: their usage classes (a moderation request; Cohere's search unit) get their columns, and
 * their scopes go to the keys that had every scope there was — keys made with the default, "everything" — while a
 * key limited to some scopes stays limited.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.integer('moderation_requests').notNullable().defaultTo(0);
    t.integer('search_units').notNullable().defaultTo(0);
  });
  for (const k of await db('api_keys').select('id', 'scopes')) {
    const scopes = String(k.scopes).split(',').filter(Boolean);
    if (!BEFORE.every((s) => scopes.includes(s))) continue;
    const more = NEW.filter((s) => !scopes.includes(s));
    if (more.length)
      await db('api_keys')
        .where('id', k.id)
        .update({ scopes: [...scopes, ...more].join(',') });
  }
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.dropColumn('moderation_requests');
    t.dropColumn('search_units');
  });
}
