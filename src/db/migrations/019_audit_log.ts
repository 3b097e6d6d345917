import type { Knex } from 'knex';

/**
 * The audit log: every state-changing operator action (admin API, CLI) — who, when, from which address, what, on
 * what, and the state before and after it (secrets masked). Rows are only ever inserted.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('audit_log', (t) => {
    t.increments('id').primary();
    t.bigInteger('created_at').notNullable();
    t.string('actor', 200).notNullable();
    t.string('address', 100).notNullable();
    t.string('action', 64).notNullable();
    t.string('target', 100).nullable();
    t.text('before').nullable();
    t.text('after').nullable();
    t.index(['created_at']);
    t.index(['action', 'id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('audit_log');
}
