import type { Knex } from 'knex';

/** The scopes a key had when it had all of them, before image generation existed. */
const EVERY_SCOPE_BEFORE = ['chat', 'completions', 'embeddings', 'models', 'messages', 'responses'];

/**
 * Generated images, a usage class of their own (`images`, unit image), and the `images` scope. A key that had every
 * scope was made to use everything (the default) and gets the new one; a key limited to some scopes stays limited:
 * image generation spends money it was not given for.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.integer('images').notNullable().defaultTo(0);
  });
  for (const k of await db('api_keys').select('id', 'scopes')) {
    const scopes = String(k.scopes).split(',').filter(Boolean);
    if (EVERY_SCOPE_BEFORE.every((s) => scopes.includes(s)) && !scopes.includes('images'))
      await db('api_keys')
        .where('id', k.id)
        .update({ scopes: [...scopes, 'images'].join(',') });
  }
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.dropColumn('images');
  });
}
