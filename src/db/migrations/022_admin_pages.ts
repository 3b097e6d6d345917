import type { Knex } from 'knex';

/**
 * What the operator's pages read that was not kept before:
 * - each usage record's hold — what was reserved before the request went upstream, and the prompt bound and output
 *   allowance it covered — so that a request's receipt can show it after the hold itself is gone (null for records
 *   written before, and for free models, which hold nothing);
 * - each redemption code's batch (the id of the first code made with it) and who made it (the audit log's actor),
 *   so that codes can be listed by batch; codes made before are grouped into batches by their creation time and note;
 * - indexes for the overview's windows (all accounts, by time) and for the usage search by model.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('usage_records', (t) => {
    t.bigInteger('held_micros').nullable();
    t.integer('held_prompt_tokens').nullable();
    t.integer('held_output_tokens').nullable();
    t.index(['created_at']);
    t.index(['model', 'created_at']);
  });
  await db.schema.alterTable('redemption_codes', (t) => {
    t.bigInteger('batch_id').unsigned().nullable();
    t.string('created_by', 200).nullable();
    t.index(['batch_id']);
  });
  await db.schema.alterTable('ledger', (t) => {
    t.index(['created_at']);
  });
  await backfillBatches(db);
}

/** One batch per (created_at, note) of the codes made before batches were kept: createCodes gave each batch one time. */
async function backfillBatches(db: Knex): Promise<void> {
  const rows = (await db('redemption_codes').orderBy('id').select('id', 'created_at', 'note')) as {
    id: number;
    created_at: number;
    note: string | null;
  }[];
  const first = new Map<string, number>();
  for (const r of rows) {
    const group = `${r.created_at}\u0000${r.note ?? ''}`;
    if (!first.has(group)) first.set(group, Number(r.id));
  }
  for (const [group, batch] of first) {
    const [at, note] = group.split('\u0000');
    const q = db('redemption_codes').where('created_at', Number(at));
    if (note) q.andWhere('note', note);
    else q.whereNull('note');
    await q.update({ batch_id: batch });
  }
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('ledger', (t) => {
    t.dropIndex(['created_at']);
  });
  await db.schema.alterTable('redemption_codes', (t) => {
    t.dropIndex(['batch_id']);
    t.dropColumn('batch_id');
    t.dropColumn('created_by');
  });
  await db.schema.alterTable('usage_records', (t) => {
    t.dropIndex(['model', 'created_at']);
    t.dropIndex(['created_at']);
    t.dropColumn('held_micros');
    t.dropColumn('held_prompt_tokens');
    t.dropColumn('held_output_tokens');
  });
}
