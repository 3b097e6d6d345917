/**
 * Card payments that come back — refunds and disputes on Stripe — take their money back from the account that the
 * payment credited: once per event (a `card_reversals` row per ref), whatever the order of delivery, and never more
 * than the payment. The balance never goes below what requests in flight hold (nor below zero): what was already spent
 * becomes debt, and the account is suspended (its keys and log-in stop) until an admin settles it — or a won dispute
 * brings the money back, which clears that much debt and reactivates the account when nothing is owed any more.
 */
import type { Knex } from 'knex';
import { transact } from '../db';
import { postWithin } from '../db/ledger';

export interface Reversal {
  /** What happened to the account. */
  outcome: 'reversed' | 'returned' | 'duplicate' | 'ignored';
  accountId?: number;
  /** The account was suspended (debt) or reactivated by this event: key caches must hear of it. */
  statusChanged?: boolean;
}

/** Records the payment intent a top-up came from (in the top-up's transaction). */
export async function recordCardPayment(trx: Knex.Transaction, p: { paymentIntent: string; accountId: number; sessionId: string; amountMicros: number }): Promise<void> {
  await trx('card_payments').insert({ payment_intent: p.paymentIntent, account_id: p.accountId, session_id: p.sessionId, amount_micros: p.amountMicros, created_at: Date.now() });
}

/**
 * Takes money back for a refund (`cumulativeMicros`: all that was refunded of the payment so far, as Stripe reports
 * it on every charge.refunded, so a late older event takes nothing) or a dispute (its amount; ref per dispute).
 */
export function takeBack(db: Knex, r: { paymentIntent: string; kind: 'card_refund' | 'dispute'; ref: string; amountMicros: number; cumulative?: boolean }): Promise<Reversal> {
  return transact(db, async (trx) => {
    const payment = await trx('card_payments').where('payment_intent', r.paymentIntent).first('account_id', 'amount_micros');
    if (!payment) return { outcome: 'ignored' };
    if (await trx('card_reversals').where('ref', r.ref).first('id')) return { outcome: 'duplicate' };
    if (r.kind === 'dispute' && (await trx('card_reversals').where('ref', `${r.ref}_won`).first('id'))) return { outcome: 'duplicate' }; // won before it was opened here
    const accountId = Number(payment.account_id);
    const account = await trx('accounts').where('id', accountId).forUpdate().first('balance_micros', 'held_micros', 'status');
    const before = (await trx('card_reversals').where({ payment_intent: r.paymentIntent }).whereIn('kind', ['card_refund', 'dispute']).select('kind', 'claimed_micros')) as { kind: string; claimed_micros: unknown }[];
    const claimedOfKind = before.filter((b) => b.kind === r.kind).reduce((a, b) => a + Number(b.claimed_micros), 0);
    const claimedAll = before.reduce((a, b) => a + Number(b.claimed_micros), 0);
    const wanted = r.cumulative ? r.amountMicros - claimedOfKind : r.amountMicros;
    const claim = Math.max(0, Math.min(wanted, Number(payment.amount_micros) - claimedAll));
    const debit = Math.min(claim, Math.max(0, Number(account.balance_micros) - Number(account.held_micros)));
    const debt = claim - debit;
    await trx('card_reversals').insert({ payment_intent: r.paymentIntent, kind: r.kind, ref: r.ref, claimed_micros: claim, debited_micros: debit, debt_micros: debt, created_at: Date.now() });
    if (debit > 0) await postWithin(trx, { accountId, kind: r.kind, amountMicros: -debit, ref: r.ref, note: debt ? `${debt} µUSD of it owed` : null });
    if (debt > 0) await trx('accounts').where('id', accountId).update({ debt_micros: trx.raw('debt_micros + ?', [debt]), status: 'disabled', suspended_for_debt: true });
    return { outcome: 'reversed', accountId, statusChanged: debt > 0 && account.status === 'active' };
  });
}

/** A dispute won: gives back what it took (and clears the debt it made); before it was taken, marks it so it never is. */
export function giveBack(db: Knex, r: { paymentIntent: string; disputeRef: string }): Promise<Reversal> {
  return transact(db, async (trx) => {
    const payment = await trx('card_payments').where('payment_intent', r.paymentIntent).first('account_id');
    if (!payment) return { outcome: 'ignored' };
    const wonRef = `${r.disputeRef}_won`;
    if (await trx('card_reversals').where('ref', wonRef).first('id')) return { outcome: 'duplicate' };
    const taken = await trx('card_reversals').where('ref', r.disputeRef).first('debited_micros', 'debt_micros');
    const debited = taken ? Number(taken.debited_micros) : 0;
    const cleared = taken ? Number(taken.debt_micros) : 0;
    await trx('card_reversals').insert({ payment_intent: r.paymentIntent, kind: 'dispute_won', ref: wonRef, claimed_micros: 0, debited_micros: -debited, debt_micros: -cleared, created_at: Date.now() });
    const accountId = Number(payment.account_id);
    if (debited > 0) await postWithin(trx, { accountId, kind: 'dispute_won', amountMicros: debited, ref: wonRef });
    if (cleared === 0) return { outcome: 'returned', accountId };
    await trx('accounts').where('id', accountId).update({ debt_micros: trx.raw('debt_micros - ?', [cleared]) });
    const after = await trx('accounts').where('id', accountId).first('debt_micros', 'suspended_for_debt');
    const reactivate = Number(after.debt_micros) <= 0 && !!after.suspended_for_debt;
    if (reactivate) await trx('accounts').where('id', accountId).update({ status: 'active', suspended_for_debt: false });
    return { outcome: 'returned', accountId, statusChanged: reactivate };
  });
}
