import type { Knex } from 'knex';

/** Where an account registered from (the client address, an IPv6 one by its /64): the admin's farming report groups by it. */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('accounts', (t) => {
    t.string('registered_from', 64).nullable().index();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('accounts', (t) => {
    t.dropIndex(['registered_from']);
    t.dropColumn('registered_from');
  });
}
