import type { Knex } from 'knex';

/**
 * Operators: the people who run the gateway, users of /admin/api of their own (not accounts), each with a role, a
 * scrypt password and a TOTP second factor; their sessions (cookie `sy_admin`, apart from the console's), and the
 * addresses each signed in from (the daily limit of failed sign-ins spares them, as the console's does).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('operators', (t) => {
    t.increments('id').primary();
    t.string('email', 320).notNullable().unique();
    t.string('password_hash', 200).notNullable();
    t.string('role', 16).notNullable();
    t.string('totp_secret', 200).nullable();
    t.boolean('totp_enabled').notNullable().defaultTo(false);
    t.bigInteger('totp_last_step').nullable();
    t.boolean('disabled').notNullable().defaultTo(false);
    t.bigInteger('created_at').notNullable();
  });
  await db.schema.createTable('operator_sessions', (t) => {
    t.string('id_hash', 64).primary();
    t.integer('operator_id').unsigned().notNullable().references('id').inTable('operators').onDelete('CASCADE');
    t.string('csrf_token', 64).notNullable();
    t.boolean('second_factor').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.index(['expires_at']);
  });
  await db.schema.createTable('operator_login_addresses', (t) => {
    t.integer('operator_id').unsigned().notNullable().references('id').inTable('operators').onDelete('CASCADE');
    t.string('address', 64).notNullable();
    t.bigInteger('last_at').notNullable();
    t.primary(['operator_id', 'address']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('operator_login_addresses');
  await db.schema.dropTableIfExists('operator_sessions');
  await db.schema.dropTableIfExists('operators');
}
