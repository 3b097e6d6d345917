import type { Knex } from 'knex';

/**
 * Stored responses of the Responses API, per account (a response's id is only found by its own account), and the
 * new scopes: a key that may chat may also use Anthropic's Messages and OpenAI's Responses, which are chat too.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('responses', (t) => {
    t.string('id', 80).primary();
    t.bigInteger('account_id').unsigned().notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.string('model', 200).notNullable();
    t.string('previous_response_id', 80).nullable();
    /** The whole conversation the response answered (earlier turns included), as input items (JSON). */
    t.text('input', 'longtext').notNullable();
    /** The response object as the client got it (JSON). */
    t.text('response', 'longtext').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['account_id', 'created_at']);
  });
  for (const k of await db('api_keys').select('id', 'scopes')) {
    const scopes = String(k.scopes).split(',').filter(Boolean);
    if (scopes.includes('chat')) {
      const more = ['messages', 'responses'].filter((s) => !scopes.includes(s));
      if (more.length)
        await db('api_keys')
          .where('id', k.id)
          .update({ scopes: [...scopes, ...more].join(',') });
    }
  }
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('responses');
}
