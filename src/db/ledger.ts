/**
 * The append-only credit ledger: every change of an account balance is one row, written in the same transaction
 * as the balance update. A (ref, kind) pair is unique, so a request or payment is applied at most once.
 */
import type { Knex } from 'knex';
import { isUniqueViolation, transact } from './index';
import { insertId } from './dialect';

/**
 * `shortfall`: what an upstream billed beyond what the account could pay (amount 0; see uncovered_micros);
 * `debt_payment`: what a credit paid of what the account owed (billing/debt.ts).
 */
export type LedgerKind =
  | 'signup'
  | 'referral'
  | 'topup'
  | 'redemption'
  | 'grant'
  | 'usage'
  | 'refund'
  | 'adjustment'
  | 'shortfall'
  | 'card_refund'
  | 'dispute'
  | 'dispute_won'
  | 'refund_failed'
  | 'debt_payment'
  | 'revocation';

export interface LedgerEntry {
  accountId: number;
  kind: LedgerKind;
  amountMicros: number;
  ref?: string | null;
  keyId?: number | null;
  model?: string | null;
  promptTokens?: number | null;
  completionTokens?: number | null;
  note?: string | null;
}

export interface LedgerRow {
  id: number;
  account_id: number;
  kind: LedgerKind;
  amount_micros: number;
  balance_after: number;
  ref: string | null;
  key_id: number | null;
  model: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  note: string | null;
  created_at: number;
}

export class DuplicateLedgerEntry extends Error {
  override name = 'DuplicateLedgerEntry';
}

/**
 * Adds `amountMicros` (negative for a charge) to the account and writes the ledger row, atomically.
 * With `floor` set, a charge that would take the balance below it — after what requests in flight hold (holds and
 * credit leases, `held_micros`), which they may still spend — is refused (returns null): one conditional UPDATE.
 */
export async function post(db: Knex, entry: LedgerEntry, opts: { floor?: number } = {}): Promise<LedgerRow | null> {
  try {
    return await transact(db, (trx) => postWithin(trx, entry, opts));
  } catch (e) {
    if (isUniqueViolation(e)) throw new DuplicateLedgerEntry(`ledger entry ${entry.kind} ${entry.ref} already exists`);
    throw e;
  }
}

/** The same as post(), inside a transaction the caller holds. */
export async function postWithin(
  trx: Knex.Transaction,
  entry: LedgerEntry,
  opts: { floor?: number } = {},
): Promise<LedgerRow | null> {
  const q = trx('accounts').where('id', entry.accountId);
  if (opts.floor !== undefined) q.andWhereRaw('balance_micros - held_micros >= ?', [opts.floor - entry.amountMicros]);
  const changed = await q.increment('balance_micros', entry.amountMicros);
  if (changed !== 1) return null;
  const { balance_micros } = await trx('accounts').where('id', entry.accountId).first('balance_micros');
  const row = {
    account_id: entry.accountId,
    kind: entry.kind,
    amount_micros: entry.amountMicros,
    balance_after: Number(balance_micros),
    ref: entry.ref ?? null,
    key_id: entry.keyId ?? null,
    model: entry.model ?? null,
    prompt_tokens: entry.promptTokens ?? null,
    completion_tokens: entry.completionTokens ?? null,
    note: entry.note ?? null,
    created_at: Date.now(),
  };
  return { id: await insertId(trx, 'ledger', row as unknown as Record<string, unknown>), ...row };
}

export async function entries(db: Knex, accountId: number, limit = 100): Promise<LedgerRow[]> {
  const rows = await db('ledger').where('account_id', accountId).orderBy('id', 'desc').limit(limit);
  return rows.map((r) => ({ ...r, id: Number(r.id), account_id: Number(r.account_id) }));
}
