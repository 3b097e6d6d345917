import type { Knex } from 'knex';

/**
 * Credit leases (a process reserves a slice of an account's and a key's money and admits requests against it in
 * memory), checkpoints of requests in flight under a lease, usage by token class, and shortfalls.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('leases', (t) => {
    t.string('id', 40).primary();
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.bigInteger('key_id').unsigned().notNullable();
    /** The process that holds it (host:pid), for people reading the table. */
    t.string('owner', 100).notNullable();
    /** Reserved on the account's and the key's held_micros; settled charges are taken out of it as they are written. */
    t.bigInteger('amount_micros').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['expires_at']);
  });
  // A request in flight under a lease has no hold of its own (amount 0): the lease renews its progress here, for
  // the sweeper to charge should the process die.
  await db.schema.alterTable('holds', (t) => {
    t.string('lease_id', 40).nullable().index();
  });
  await db.schema.alterTable('usage_records', (t) => {
    t.integer('cached_tokens').notNullable().defaultTo(0);
    t.integer('cache_write_tokens').notNullable().defaultTo(0);
    t.integer('reasoning_tokens').notNullable().defaultTo(0);
  });
  // A `shortfall` row records what an upstream billed beyond what the account could pay (its amount is 0).
  await db.schema.alterTable('ledger', (t) => {
    t.bigInteger('uncovered_micros').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('ledger', (t) => t.dropColumn('uncovered_micros'));
  await db.schema.alterTable('usage_records', (t) => {
    t.dropColumn('cached_tokens');
    t.dropColumn('cache_write_tokens');
    t.dropColumn('reasoning_tokens');
  });
  await db.schema.alterTable('holds', (t) => {
    t.dropIndex(['lease_id']);
    t.dropColumn('lease_id');
  });
  await db.schema.dropTableIfExists('leases');
}
