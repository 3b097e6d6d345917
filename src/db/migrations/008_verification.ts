import type { Knex } from 'knex';

/**
 * E-mail verification and password reset. Sign-up credits wait for a verified address: `verified_at`; the
 * referrer recorded at registration (`referred_by`) is credited then too. `email_key` is the address as one mailbox
 * (lower case, no `+tag`, no dots at Gmail): the starter and referral credits are paid once per mailbox. Tokens of
 * the links mailed (single use, expiring) are stored hashed. Accounts that existed before were verified then.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('accounts', (t) => {
    t.bigInteger('verified_at').nullable();
    t.string('email_key', 320).nullable().index();
  });
  await db('accounts').update({ verified_at: db.ref('created_at') });
  await db.schema.createTable('email_tokens', (t) => {
    t.bigIncrements('id').primary();
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    /** `verify` or `reset`. */
    t.string('purpose', 16).notNullable();
    t.string('token_hash', 64).notNullable().unique();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
    t.bigInteger('created_at').notNullable();
    t.index(['account_id', 'purpose']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('email_tokens');
  await db.schema.alterTable('accounts', (t) => {
    t.dropIndex(['email_key']);
    t.dropColumn('email_key');
    t.dropColumn('verified_at');
  });
}
