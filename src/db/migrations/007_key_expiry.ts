import type { Knex } from 'knex';

/** A key may expire: after `expires_at` (epoch ms) it is refused like an unknown key. */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('api_keys', (t) => {
    t.bigInteger('expires_at').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('api_keys', (t) => {
    t.dropColumn('expires_at');
  });
}
