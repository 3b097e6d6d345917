/**
 * Money owed comes back first. An account owes (`debt_micros`, not part of its balance) when card payments came back
 * after their credits were spent (reversals.ts). Every credit to it — a top-up (card, code, admin grant) or money that
 * comes back (a won dispute, a failed refund) — pays the debt before it adds to the balance: the credit is its own
 * ledger row, and what it paid of the debt a `debt_payment` row right after it, so that the balance stays the sum of
 * the ledger and the ledger shows both. When nothing is owed any more, an account suspended for its debt is active
 * again (one an admin disabled stays so: setting a status by hand ends the suspension for debt).
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { transact } from '../db';
import { postWithin, type LedgerEntry, type LedgerRow } from '../db/ledger';

export interface DebtPaid {
  /** What went to the debt. */
  paidMicros: number;
  /** The balance afterwards. */
  balanceMicros: number;
  /** The account was suspended for its debt and is active again: key caches must hear of it. */
  reactivated: boolean;
}

/**
 * Pays what the account owes out of what it has (its balance less what requests in flight hold), as a `debt_payment`
 * row with `ref` (unique per credit: `ledger_<id>` of the credit that brought the money); ends the suspension when
 * nothing is owed. In the caller's transaction, after the credit.
 */
export async function payDebtWithin(
  trx: Knex.Transaction,
  accountId: number,
  ref: string,
  source: string,
): Promise<DebtPaid> {
  const account = await trx('accounts')
    .where('id', accountId)
    .forUpdate()
    .first('balance_micros', 'held_micros', 'debt_micros', 'status', 'suspended_for_debt');
  const debt = Number(account.debt_micros);
  const pay = Math.min(debt, Math.max(0, Number(account.balance_micros) - Number(account.held_micros)));
  let balance = Number(account.balance_micros);
  if (pay > 0)
    balance = (await postWithin(trx, {
      accountId,
      kind: 'debt_payment',
      amountMicros: -pay,
      ref,
      note: `owed: paid out of ${source}`,
    }))!.balance_after;
  const settled = debt === pay && !!account.suspended_for_debt;
  if (pay > 0 || settled)
    await trx('accounts')
      .where('id', accountId)
      .update({ debt_micros: debt - pay, ...(settled && { status: 'active', suspended_for_debt: false }) });
  return { paidMicros: pay, balanceMicros: balance, reactivated: settled && account.status !== 'active' };
}

/** Credits the account (a positive entry) and pays its debt out of it; null when there is no such account. */
export async function creditWithin(
  trx: Knex.Transaction,
  entry: LedgerEntry,
): Promise<(DebtPaid & { row: LedgerRow }) | null> {
  const row = await postWithin(trx, entry);
  if (!row) return null;
  return {
    row,
    ...(await payDebtWithin(trx, entry.accountId, `ledger_${row.id}`, `${entry.kind} ${entry.ref ?? row.id}`)),
  };
}

/**
 * Money that comes back after a reversal (a won dispute, a failed refund): what the reversal made owed and is still
 * owed (`ownDebtMicros`, at most) is cancelled — it never was in the balance —, the rest is credited as a `kind` row
 * (the part of its debt that was paid meanwhile comes back with it), and then pays any other debt.
 */
export async function moneyBackWithin(
  trx: Knex.Transaction,
  r: {
    accountId: number;
    kind: 'dispute_won' | 'refund_failed';
    ref: string;
    amountMicros: number;
    ownDebtMicros: number;
  },
): Promise<DebtPaid & { creditedMicros: number; cancelledMicros: number }> {
  const { debt_micros } = await trx('accounts').where('id', r.accountId).forUpdate().first('debt_micros');
  const cancel = Math.max(0, Math.min(r.ownDebtMicros, r.amountMicros, Number(debt_micros)));
  if (cancel > 0)
    await trx('accounts')
      .where('id', r.accountId)
      .update({ debt_micros: Number(debt_micros) - cancel });
  const credit = r.amountMicros - cancel;
  const note = cancel > 0 ? `${cancel} µUSD of it cancels what it made owed` : null;
  const row =
    credit > 0
      ? await postWithin(trx, { accountId: r.accountId, kind: r.kind, amountMicros: credit, ref: r.ref, note })
      : null;
  const paid = await payDebtWithin(trx, r.accountId, row ? `ledger_${row.id}` : r.ref, `${r.kind} ${r.ref}`);
  return { ...paid, creditedMicros: credit, cancelledMicros: cancel };
}

/** Why a debt was not settled: nothing is owed, or (paying from the balance) nothing of the balance is free. */
export class DebtNotSettled extends Error {
  override name = 'DebtNotSettled';
  constructor(
    readonly reason: 'no_debt' | 'nothing_free',
    readonly owedMicros: number,
    readonly freeMicros: number,
  ) {
    super(reason);
  }
}

export interface DebtSettled {
  paidMicros: number;
  forgivenMicros: number;
  /** Still owed afterwards. */
  debtMicros: number;
  balanceMicros: number;
  status: 'active' | 'disabled';
  /** The account was suspended for its debt and is active again: key caches must hear of it. */
  reactivated: boolean;
}

/**
 * An operator settles what an account owes: out of what it has free (`payDebtWithin`, as a top-up would pay it), or
 * forgiven — the debt is written off (it never was in the balance, so the balance and the ledger's sum are
 * unchanged) and a ledger row of 0 keeps the reason where the account's history is read. Null: no such account;
 * throws DebtNotSettled when nothing is owed or nothing of the balance is free.
 */
export async function settleDebt(
  db: Knex,
  accountId: number,
  o: { forgive: boolean; note: string | null },
): Promise<DebtSettled | null> {
  return transact(db, async (trx) => {
    const a = await trx('accounts')
      .where('id', accountId)
      .forUpdate()
      .first('balance_micros', 'held_micros', 'debt_micros', 'status', 'suspended_for_debt');
    if (!a) return null;
    const owed = Number(a.debt_micros);
    const free = Math.max(0, Number(a.balance_micros) - Number(a.held_micros));
    if (owed <= 0) throw new DebtNotSettled('no_debt', 0, free);
    const ref = `settle_${accountId}_${Date.now()}_${crypto.randomBytes(4).toString('hex')}`;
    if (!o.forgive) {
      if (free <= 0) throw new DebtNotSettled('nothing_free', owed, free);
      const paid = await payDebtWithin(trx, accountId, ref, 'the balance, settled by an operator');
      const status = paid.reactivated ? 'active' : a.status;
      return { ...paid, forgivenMicros: 0, debtMicros: owed - paid.paidMicros, status };
    }
    const reactivate = !!a.suspended_for_debt;
    await trx('accounts')
      .where('id', accountId)
      .update({ debt_micros: 0, ...(reactivate && { status: 'active', suspended_for_debt: false }) });
    await trx('ledger').insert({
      account_id: accountId,
      kind: 'adjustment',
      amount_micros: 0,
      balance_after: Number(a.balance_micros),
      ref,
      note: `owed ${owed} µUSD forgiven: ${o.note ?? ''}`.slice(0, 500),
      created_at: Date.now(),
    });
    const status = reactivate ? 'active' : a.status;
    return {
      paidMicros: 0,
      forgivenMicros: owed,
      debtMicros: 0,
      balanceMicros: Number(a.balance_micros),
      status,
      reactivated: reactivate && a.status !== 'active',
    };
  });
}
