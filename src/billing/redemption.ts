/**
 * Redemption codes: single-use top-up codes made by an admin in batches (`SY-XXXXX-XXXXX-XXXXX-XXXXX`, 100 random
 * bits, so they cannot be guessed). Only their SHA-256 is stored. Redeeming is one transaction around a conditional
 * UPDATE (`... WHERE redeemed_by IS NULL`): of two concurrent redemptions exactly one changes the row and writes the
 * `redemption` ledger row (ref = the code's id, unique with its kind); the other finds it taken. An account that owes
 * pays its debt out of it first (debt.ts).
 */
import { sha256Hex } from '../digest';
import type { Knex } from 'knex';
import { canonicalCode, randomCode } from '../accounts/accounts';
import { isUniqueViolation, transact } from '../db';
import { creditWithin } from './debt';
import { insertId } from '../db/dialect';

export class RedemptionError extends Error {
  override name = 'RedemptionError';
  constructor(
    readonly reason: 'unknown' | 'redeemed',
    message: string,
  ) {
    super(message);
  }
}

export interface NewCode {
  id: number;
  code: string;
  amount_micros: number;
}

const CANONICAL = /^SY[0-9A-Z]{20}$/;

export const MAX_BATCH = 1000;

/**
 * Makes `count` codes worth `amountMicros` each, one batch (its id is its first code's), made by `createdBy` (as the
 * audit log names the operator); the codes are returned this once.
 */
export async function createCodes(
  db: Knex,
  count: number,
  amountMicros: number,
  note: string | null = null,
  createdBy: string | null = null,
): Promise<NewCode[]> {
  if (!Number.isInteger(count) || count < 1 || count > MAX_BATCH)
    throw new RangeError(`count must be between 1 and ${MAX_BATCH}`);
  if (!Number.isSafeInteger(amountMicros) || amountMicros <= 0) throw new RangeError('the amount must be more than 0');
  const now = Date.now();
  const codes = Array.from({ length: count }, () => {
    const body = randomCode(20);
    return `SY-${body.match(/.{5}/g)!.join('-')}`;
  });
  return transact(db, async (trx) => {
    const out: NewCode[] = [];
    for (const code of codes) {
      const id = await insertId(trx, 'redemption_codes', {
        code_hash: sha256Hex(canonicalCode(code)),
        prefix: code.slice(0, 8),
        amount_micros: amountMicros,
        note,
        created_at: now,
        batch_id: out[0]?.id ?? null,
        created_by: createdBy?.slice(0, 200) ?? null,
      });
      out.push({
        id,
        code,
        amount_micros: amountMicros,
      });
    }
    await trx('redemption_codes').where('id', out[0].id).update({ batch_id: out[0].id });
    return out;
  });
}

export interface CodeRecord {
  id: number;
  batch: number;
  /** The code's first characters (`SY-7KQ2M`): the rest is not stored. */
  prefix: string;
  amount_micros: number;
  note: string | null;
  created_at: number;
  created_by: string | null;
  redeemed_at: number | null;
  redeemed_by: { account_id: number; email: string | null } | null;
}

/** Codes newest first, before `beforeId`, optionally of one batch and either redeemed or unused. */
export async function listCodes(
  db: Knex,
  o: { limit: number; beforeId?: number; batch?: number; status?: 'redeemed' | 'unused' },
): Promise<CodeRecord[]> {
  const q = db('redemption_codes as c')
    .leftJoin('accounts as a', 'a.id', 'c.redeemed_by')
    .orderBy('c.id', 'desc')
    .limit(o.limit);
  if (o.beforeId !== undefined) q.where('c.id', '<', o.beforeId);
  if (o.batch !== undefined) q.andWhere('c.batch_id', o.batch);
  if (o.status === 'redeemed') q.whereNotNull('c.redeemed_by');
  if (o.status === 'unused') q.whereNull('c.redeemed_by');
  const rows = (await q.select('c.*', 'a.email as redeemer_email')) as Record<string, unknown>[];
  return rows.map((r) => ({
    id: Number(r.id),
    batch: Number(r.batch_id ?? r.id),
    prefix: String(r.prefix),
    amount_micros: Number(r.amount_micros),
    note: (r.note as string | null) ?? null,
    created_at: Number(r.created_at),
    created_by: (r.created_by as string | null) ?? null,
    redeemed_at: r.redeemed_at === null || r.redeemed_at === undefined ? null : Number(r.redeemed_at),
    redeemed_by:
      r.redeemed_by === null || r.redeemed_by === undefined
        ? null
        : { account_id: Number(r.redeemed_by), email: (r.redeemer_email as string | null) ?? null },
  }));
}

/**
 * Credits the code's amount to the account, once (what it owes first); throws RedemptionError for an unknown or used
 * code. `reactivated`: paying its debt ended its suspension.
 */
export async function redeemCode(
  db: Knex,
  accountId: number,
  code: string,
): Promise<{ codeId: number; amountMicros: number; balanceMicros: number; reactivated: boolean }> {
  const canonical = canonicalCode(code);
  const unknown = () => new RedemptionError('unknown', `Unknown redemption code: ${code.trim().slice(0, 40)}`);
  if (!CANONICAL.test(canonical)) throw unknown();
  const hash = sha256Hex(canonical);
  try {
    return await transact(db, async (trx) => {
      const row = await trx('redemption_codes').where('code_hash', hash).first('id', 'amount_micros');
      if (!row) throw unknown();
      const taken = await trx('redemption_codes')
        .where('id', row.id)
        .whereNull('redeemed_by')
        .update({ redeemed_by: accountId, redeemed_at: Date.now() });
      if (taken !== 1) throw new RedemptionError('redeemed', 'This code has already been redeemed');
      const entry = await creditWithin(trx, {
        accountId,
        kind: 'redemption',
        amountMicros: Number(row.amount_micros),
        ref: String(row.id),
      });
      if (!entry) throw new Error(`account ${accountId} not found`);
      return {
        codeId: Number(row.id),
        amountMicros: Number(row.amount_micros),
        balanceMicros: entry.balanceMicros,
        reactivated: entry.reactivated,
      };
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new RedemptionError('redeemed', 'This code has already been redeemed');
    throw e;
  }
}
