import crypto from 'node:crypto';
import type { Knex } from 'knex';

/** Web console: passwords, referral codes, login sessions, redemption codes. */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('accounts', (t) => {
    t.string('password_hash', 200).nullable(); // scrypt$N$r$p$salt$hash; null: no console login (CLI-made accounts)
    t.string('referral_code', 32).nullable().unique();
    t.bigInteger('referred_by').unsigned().nullable();
  });
  // Accounts made before this migration get a referral code too.
  for (const { id } of await db('accounts').whereNull('referral_code').select('id')) {
    await db('accounts')
      .where('id', id)
      .update({ referral_code: `${crypto.randomBytes(5).toString('hex')}${id}`.toUpperCase().slice(0, 32) });
  }
  // Only the SHA-256 of a session id is stored: a leaked table does not let anyone in.
  await db.schema.createTable('sessions', (t) => {
    t.string('id_hash', 64).primary();
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.string('csrf_token', 64).notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.index(['account_id']);
    t.index(['expires_at']);
  });
  // Single-use top-up codes made by an admin; only their SHA-256 is stored.
  await db.schema.createTable('redemption_codes', (t) => {
    t.bigIncrements('id').primary();
    t.string('code_hash', 64).notNullable().unique();
    t.string('prefix', 16).notNullable();
    t.bigInteger('amount_micros').notNullable();
    t.string('note', 500).nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('redeemed_by').unsigned().nullable();
    t.bigInteger('redeemed_at').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('redemption_codes');
  await db.schema.dropTableIfExists('sessions');
  await db.schema.alterTable('accounts', (t) => {
    t.dropUnique(['referral_code']);
    t.dropColumn('password_hash');
    t.dropColumn('referral_code');
    t.dropColumn('referred_by');
  });
}
