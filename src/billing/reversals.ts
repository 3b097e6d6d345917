/**
 * Card payments that come back — refunds and disputes on Stripe — take their money back from the account that the
 * payment credited: once per event (a `card_reversals` row per ref), whatever the order of delivery, and never more
 * than the payment. The balance never goes below what requests in flight hold (nor below zero): what was already spent
 * becomes debt, and the account is suspended (its keys and log-in stop) until the debt is paid — every top-up pays it
 * first (debt.ts) — or the money comes back: a won dispute, or a refund that failed (the card could not take it), gives
 * back what it took, cancels what it made owed, and the account is active again when nothing is owed any more.
 *
 * A failed refund is known by the refund's id (ref `refund_failed_<id>`, once). Its row keeps the refund's amount
 * (claimed, negative) and what it gave back (debited and debt, negative): a refund event — a later one, or an older one
 * delivered late — takes only what of its cumulative amount is beyond the refunds taken and those that failed, and a
 * failure that arrives before its refund leaves it nothing to take. This counts a failed refund as still part of the
 * charge's `amount_refunded`; were Stripe to lower that instead, a later refund of the charge would take less (by what
 * failed), never more.
 *
 * Order of delivery. Stripe does not promise it: a refund or a dispute can arrive before the Checkout Session it takes
 * back from was credited (the gateway was down, the webhook retried). Such a reversal is kept as `pending_*` and applied
 * in the same transaction that credits the payment, so the credit never outlives its refund.
 *
 * Locking. Every transaction here starts with a locking read of the payment's row (or its gap, when there is none yet):
 * all reversals of one payment — and its crediting — run one after another. On MariaDB that first statement must be
 * the lock: a plain read first would fix the transaction's snapshot, and after waiting for the lock it would still
 * not see what the transaction before it wrote (two refunds at once would both take the whole cumulative amount).
 */
import type { Knex } from 'knex';
import { isUniqueViolation, transact } from '../db';
import { postWithin } from '../db/ledger';
import { moneyBackWithin } from './debt';

export interface Reversal {
  /** What happened to the account (`pending`: the payment is not credited yet; applied when it is). */
  outcome: 'reversed' | 'returned' | 'duplicate' | 'ignored' | 'pending';
  accountId?: number;
  /** The account was suspended (debt) or reactivated by this event: key caches must hear of it. */
  statusChanged?: boolean;
}

export interface TakeBack {
  paymentIntent: string;
  kind: 'card_refund' | 'dispute';
  ref: string;
  /** A refund's cumulative amount (`amount_refunded`: all that was refunded of the charge so far), or a dispute's amount. */
  amountMicros: number;
}

/** What a reversal that waits for its payment is stored as (its `claimed_micros` holds the amount it asks for). */
const PENDING = { card_refund: 'pending_card_refund', dispute: 'pending_dispute' } as const;

/** Records the payment intent a top-up came from (in the top-up's transaction). */
export async function recordCardPayment(
  trx: Knex.Transaction,
  p: { paymentIntent: string; accountId: number; sessionId: string; amountMicros: number },
): Promise<void> {
  await trx('card_payments').insert({
    payment_intent: p.paymentIntent,
    account_id: p.accountId,
    session_id: p.sessionId,
    amount_micros: p.amountMicros,
    created_at: Date.now(),
  });
}

/**
 * Applies the reversals of a payment that arrived before it was credited, oldest first (in the transaction that has
 * just credited it and recorded it with recordCardPayment). Returns whether one of them suspended the account.
 */
export async function applyPendingReversals(trx: Knex.Transaction, paymentIntent: string): Promise<boolean> {
  const pending = (await trx('card_reversals')
    .where('payment_intent', paymentIntent)
    .whereIn('kind', Object.values(PENDING))
    .orderBy('id')
    .forUpdate()
    .select('id', 'kind', 'ref', 'claimed_micros')) as {
    id: number;
    kind: string;
    ref: string;
    claimed_micros: unknown;
  }[];
  let suspended = false;
  for (const p of pending) {
    await trx('card_reversals').where('id', p.id).del();
    const kind = p.kind === PENDING.dispute ? 'dispute' : 'card_refund';
    const done = await takeBackWithin(trx, { paymentIntent, kind, ref: p.ref, amountMicros: Number(p.claimed_micros) });
    suspended ||= !!done.statusChanged;
  }
  return suspended;
}

type ReversalRow = { kind: string; claimed: number; debited: number; debt: number };

/** The reversals applied to a payment so far (locked). */
async function reversalsOf(trx: Knex.Transaction, paymentIntent: string): Promise<ReversalRow[]> {
  const rows = await trx('card_reversals')
    .where({ payment_intent: paymentIntent })
    .whereIn('kind', ['card_refund', 'dispute', 'dispute_won', 'refund_failed'])
    .forUpdate()
    .select('kind', 'claimed_micros', 'debited_micros', 'debt_micros');
  return rows.map((b) => ({
    kind: String(b.kind),
    claimed: Number(b.claimed_micros),
    debited: Number(b.debited_micros),
    debt: Number(b.debt_micros),
  }));
}

/** What a reversal took of the payment (negative: gave back — a won dispute its claim, a failed refund what it returned). */
const taken = (b: ReversalRow) => (b.kind === 'refund_failed' ? b.debited + b.debt : b.claimed);

/** What of the cumulative amount refunded is accounted for: the refunds taken, and the failed ones (what they did not give back). */
const refundsCounted = (rows: ReversalRow[]) =>
  rows.reduce(
    (a, b) =>
      a + (b.kind === 'card_refund' ? b.claimed : b.kind === 'refund_failed' ? b.debited + b.debt - b.claimed : 0),
    0,
  );

/**
 * Takes money back for a refund (the cumulative amount Stripe reports on every charge.refunded, so a late older
 * event takes nothing more) or a dispute (its amount; ref per dispute). A repeated delivery is a `duplicate`.
 */
export async function takeBack(db: Knex, r: TakeBack): Promise<Reversal> {
  try {
    return await transact(db, (trx) => takeBackWithin(trx, r));
  } catch (e) {
    if (isUniqueViolation(e)) return { outcome: 'duplicate' }; // the same event, delivered twice at once
    throw e;
  }
}

async function takeBackWithin(trx: Knex.Transaction, r: TakeBack): Promise<Reversal> {
  const payment = await trx('card_payments')
    .where('payment_intent', r.paymentIntent)
    .forUpdate()
    .first('account_id', 'amount_micros');
  if (await trx('card_reversals').where('ref', r.ref).forUpdate().first('id')) return { outcome: 'duplicate' };
  if (r.kind === 'dispute' && (await trx('card_reversals').where('ref', `${r.ref}_won`).forUpdate().first('id')))
    return { outcome: 'duplicate' }; // won before it was opened here
  if (!payment) {
    await trx('card_reversals').insert({
      payment_intent: r.paymentIntent,
      kind: PENDING[r.kind],
      ref: r.ref,
      claimed_micros: r.amountMicros,
      debited_micros: 0,
      debt_micros: 0,
      created_at: Date.now(),
    });
    return { outcome: 'pending' };
  }
  const accountId = Number(payment.account_id);
  const account = await trx('accounts')
    .where('id', accountId)
    .forUpdate()
    .first('balance_micros', 'held_micros', 'status');
  const before = await reversalsOf(trx, r.paymentIntent);
  const wanted = r.kind === 'card_refund' ? r.amountMicros - refundsCounted(before) : r.amountMicros;
  const claim = Math.max(0, Math.min(wanted, Number(payment.amount_micros) - before.reduce((a, b) => a + taken(b), 0)));
  const debit = Math.min(claim, Math.max(0, Number(account.balance_micros) - Number(account.held_micros)));
  const debt = claim - debit;
  await trx('card_reversals').insert({
    payment_intent: r.paymentIntent,
    kind: r.kind,
    ref: r.ref,
    claimed_micros: claim,
    debited_micros: debit,
    debt_micros: debt,
    created_at: Date.now(),
  });
  if (debit > 0)
    await postWithin(trx, {
      accountId,
      kind: r.kind,
      amountMicros: -debit,
      ref: r.ref,
      note: debt ? `${debt} µUSD of it owed` : null,
    });
  if (debt > 0)
    await trx('accounts')
      .where('id', accountId)
      .update({ debt_micros: trx.raw('debt_micros + ?', [debt]), status: 'disabled', suspended_for_debt: true });
  return { outcome: 'reversed', accountId, statusChanged: debt > 0 && account.status === 'active' };
}

/**
 * A dispute won: gives back what it took (with what of the debt it made a top-up paid meanwhile) and cancels what is
 * still owed of that debt; before it was taken — or before its payment was credited here — marks it so that it never is.
 */
export async function giveBack(db: Knex, r: { paymentIntent: string; disputeRef: string }): Promise<Reversal> {
  try {
    return await transact(db, (trx) => giveBackWithin(trx, r));
  } catch (e) {
    if (isUniqueViolation(e)) return { outcome: 'duplicate' };
    throw e;
  }
}

async function giveBackWithin(
  trx: Knex.Transaction,
  r: { paymentIntent: string; disputeRef: string },
): Promise<Reversal> {
  const payment = await trx('card_payments').where('payment_intent', r.paymentIntent).forUpdate().first('account_id');
  const wonRef = `${r.disputeRef}_won`;
  if (await trx('card_reversals').where('ref', wonRef).forUpdate().first('id')) return { outcome: 'duplicate' };
  const dispute = await trx('card_reversals')
    .where('ref', r.disputeRef)
    .forUpdate()
    .first('kind', 'claimed_micros', 'debited_micros', 'debt_micros');
  if (dispute && dispute.kind === PENDING.dispute) await trx('card_reversals').where('ref', r.disputeRef).del(); // never applied: nothing to give back
  const applied = dispute && dispute.kind === 'dispute' ? dispute : null;
  const [claimed, debited, owed] = applied
    ? [Number(applied.claimed_micros), Number(applied.debited_micros), Number(applied.debt_micros)]
    : [0, 0, 0];
  await trx('card_reversals').insert({
    payment_intent: r.paymentIntent,
    kind: 'dispute_won',
    ref: wonRef,
    claimed_micros: -claimed,
    debited_micros: -debited,
    debt_micros: -owed,
    created_at: Date.now(),
  });
  if (!payment) return { outcome: 'pending' };
  const accountId = Number(payment.account_id);
  const back = await moneyBackWithin(trx, {
    accountId,
    kind: 'dispute_won',
    ref: wonRef,
    amountMicros: debited + owed,
    ownDebtMicros: owed,
  });
  return { outcome: 'returned', accountId, statusChanged: back.reactivated };
}

/**
 * A refund that failed (`refundRef`: once per refund): gives back what the refunds of the payment took, up to its
 * amount; what they made owed and is still owed is cancelled rather than credited. Before its payment was credited,
 * or before its refund was taken, it gives nothing and is kept, so that the refund takes nothing of it.
 */
export async function refundFailed(
  db: Knex,
  r: { paymentIntent: string; refundRef: string; amountMicros: number },
): Promise<Reversal> {
  try {
    return await transact(db, (trx) => refundFailedWithin(trx, r));
  } catch (e) {
    if (isUniqueViolation(e)) return { outcome: 'duplicate' };
    throw e;
  }
}

async function refundFailedWithin(
  trx: Knex.Transaction,
  r: { paymentIntent: string; refundRef: string; amountMicros: number },
): Promise<Reversal> {
  const payment = await trx('card_payments').where('payment_intent', r.paymentIntent).forUpdate().first('account_id');
  if (await trx('card_reversals').where('ref', r.refundRef).forUpdate().first('id')) return { outcome: 'duplicate' };
  const refunds = (await reversalsOf(trx, r.paymentIntent)).filter(
    (b) => b.kind === 'card_refund' || b.kind === 'refund_failed',
  );
  const row = {
    payment_intent: r.paymentIntent,
    kind: 'refund_failed',
    ref: r.refundRef,
    claimed_micros: -r.amountMicros,
    debited_micros: 0,
    debt_micros: 0,
    created_at: Date.now(),
  };
  if (!payment) {
    await trx('card_reversals').insert(row);
    return { outcome: 'pending' };
  }
  const accountId = Number(payment.account_id);
  const amountMicros = Math.max(
    0,
    Math.min(
      r.amountMicros,
      refunds.reduce((a, b) => a + taken(b), 0),
    ),
  );
  const ownDebtMicros = refunds.reduce((a, b) => a + b.debt, 0);
  const back = await moneyBackWithin(trx, {
    accountId,
    kind: 'refund_failed',
    ref: r.refundRef,
    amountMicros,
    ownDebtMicros,
  });
  await trx('card_reversals').insert({
    ...row,
    debited_micros: -back.creditedMicros,
    debt_micros: -back.cancelledMicros,
  });
  return { outcome: 'returned', accountId, statusChanged: back.reactivated };
}
