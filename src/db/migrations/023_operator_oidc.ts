import type { Knex } from 'knex';

/**
 * OpenID Connect sign-in for operators: the identity (issuer and subject) an operator is linked to, so that a
 * changed email at the provider still signs in as the same operator; and the sign-ins under way, each a row keyed by
 * the SHA-256 of a random cookie of the browser that started it, holding its state, nonce and PKCE verifier until
 * the provider sends the browser back (ten minutes at most, used once). An operator made by OpenID Connect has no
 * password: its password_hash is empty, which no password matches.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('operators', (t) => {
    t.string('oidc_issuer', 255).nullable();
    t.string('oidc_subject', 255).nullable();
    t.unique(['oidc_issuer', 'oidc_subject']);
  });
  await db.schema.createTable('operator_oidc_logins', (t) => {
    t.string('id_hash', 64).primary();
    t.string('state', 100).notNullable();
    t.string('nonce', 100).notNullable();
    t.string('code_verifier', 100).notNullable();
    t.string('redirect_uri', 500).notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.index(['expires_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('operator_oidc_logins');
  await db.schema.alterTable('operators', (t) => {
    t.dropUnique(['oidc_issuer', 'oidc_subject']);
    t.dropColumn('oidc_subject');
    t.dropColumn('oidc_issuer');
  });
}
