/**
 * `Idempotency-Key` for admin operations (grants, adjustments, code batches; the admin API and the CLI): what a
 * retry after a lost answer needs, so that it credits nothing twice.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { isUniqueViolation, transact } from '../db';
import { DuplicateLedgerEntry } from '../db/ledger';

/** How long an Idempotency-Key is remembered (as Stripe does). */
const IDEMPOTENCY_MS = 24 * 3_600_000;

/** The same Idempotency-Key sent with a different request. */
export class IdempotencyMismatch extends Error {}

/**
 * `Idempotency-Key` for admin operations: the first request with a key runs (in one transaction with the record of
 * its answer); a retry with the same key and the same request within 24 h gets that answer and changes nothing —
 * also when both arrive at once (the second one's work is rolled back on the key's unique constraint). The same key
 * with another request is refused. Without a key, the work just runs.
 */
export async function idempotent<T>(
  db: Knex,
  scope: string,
  key: string | undefined,
  request: unknown,
  run: (db: Knex) => Promise<T>,
): Promise<T> {
  if (key === undefined) return run(db);
  const fingerprint = crypto.createHash('sha256').update(JSON.stringify(request)).digest('hex');
  const remembered = async (): Promise<T | undefined> => {
    const row = await db('idempotency_keys')
      .where({ scope, key })
      .andWhere('created_at', '>=', Date.now() - IDEMPOTENCY_MS)
      .first('fingerprint', 'response');
    if (!row) return undefined;
    if (row.fingerprint !== fingerprint)
      throw new IdempotencyMismatch(`Idempotency-Key '${key}' was used with another request`);
    return JSON.parse(String(row.response)) as T;
  };
  const first = await remembered();
  if (first !== undefined) return first;
  try {
    return await transact(db, async (trx) => {
      await trx('idempotency_keys')
        .where({ scope, key })
        .andWhere('created_at', '<', Date.now() - IDEMPOTENCY_MS)
        .del(); // an expired use
      const result = await run(trx);
      await trx('idempotency_keys').insert({
        scope,
        key,
        fingerprint,
        response: JSON.stringify(result),
        created_at: Date.now(),
      });
      return result;
    });
  } catch (e) {
    if (!isUniqueViolation(e) && !(e instanceof DuplicateLedgerEntry)) throw e;
    const again = await remembered(); // a concurrent first use won: its answer
    if (again === undefined) throw e;
    return again;
  }
}

/** Forgets idempotency keys older than 24 h. */
export async function purgeIdempotencyKeys(db: Knex): Promise<number> {
  return db('idempotency_keys')
    .where('created_at', '<', Date.now() - IDEMPOTENCY_MS)
    .del();
}
