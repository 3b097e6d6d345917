import type { Knex } from 'knex';

/**
 * Where each account logged in from (an IPv4 address, an IPv6 /64) and when last: the daily limit of failed log-ins
 * per email does not shut the owner out at an address it has used before (see services/consoleLimits.ts).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('login_addresses', (t) => {
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.string('address', 64).notNullable();
    t.bigInteger('last_at').notNullable();
    t.primary(['account_id', 'address']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('login_addresses');
}
