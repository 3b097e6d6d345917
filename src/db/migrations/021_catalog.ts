import type { Knex } from 'knex';

/**
 * The catalog in the database (`catalog: database`): providers and models as append-only revisions, each the whole
 * document (JSON, credentials sealed). The newest is the catalog. `parent` is the revision a change was based on and
 * is unique: of two changes based on the same revision only one is written (the other is re-applied on top of it).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('catalog_revisions', (t) => {
    t.increments('id').primary();
    t.integer('parent').notNullable().unique();
    t.text('document', 'mediumtext').notNullable();
    t.string('actor', 200).notNullable();
    t.bigInteger('created_at').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('catalog_revisions');
}
