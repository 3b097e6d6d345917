/**
 * Card top-ups through Stripe Checkout, with the official `stripe` library. Keys come from the environment:
 * STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET (both, or card payments are off); STRIPE_API_BASE (e.g.
 * http://127.0.0.1:12111) points the library at another API host, for tests with a fake Stripe.
 *
 * The webhook (`checkout.session.completed` with payment_status `paid`, and `checkout.session.async_payment_succeeded`)
 * credits `amount_total` cents × 10,000 µUSD to `metadata.account_id` as a `topup` ledger row whose ref is the
 * Checkout Session id: the ledger's unique (ref, kind) makes every further delivery of either event a no-op. The
 * payment intent is recorded with it, so that `charge.refunded`, `charge.dispute.created` / `funds_withdrawn`,
 * `funds_reinstated` and `charge.dispute.closed` (won: the money comes back; lost: taken, if not yet) find the account
 * (reversals.ts); those that arrive before the payment was credited are applied when it is. A refund that fails
 * (`charge.refund.updated`, or `refund.updated` / `refund.failed`, with status `failed`) gives back what it took, once
 * per refund. A top-up to an account that owes pays the debt first (debt.ts).
 */
import type Stripe from 'stripe';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { isUniqueViolation, transact } from '../db';
import { postWithin } from '../db/ledger';
import { payDebtWithin } from './debt';
import { applyPendingReversals, giveBack, recordCardPayment, refundFailed, takeBack, type Reversal } from './reversals';

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string;
  /** Another API base, e.g. http://127.0.0.1:12111 (tests). */
  apiBase: string | null;
}

export function stripeSettingsFromEnv(env: NodeJS.ProcessEnv): StripeSettings | null {
  const secretKey = env.STRIPE_SECRET_KEY?.trim();
  const webhookSecret = env.STRIPE_WEBHOOK_SECRET?.trim();
  if (!secretKey || !webhookSecret) return null;
  return { secretKey, webhookSecret, apiBase: env.STRIPE_API_BASE?.trim() || null };
}

export const MICROS_PER_CENT = 10_000;

export class SignatureError extends Error {
  override name = 'SignatureError';
}

export interface WebhookResult {
  received: true;
  /**
   * What was done: `credited`, `reversed` (a refund or dispute took money back), `returned` (a won dispute or a failed
   * refund gave it back), `pending` (a refund, dispute or failed refund of a payment not credited yet: applied when it
   * is), `duplicate` (already done), or `ignored` (another event, unpaid, not USD, an inquiry...).
   */
  outcome: 'credited' | 'reversed' | 'returned' | 'pending' | 'duplicate' | 'ignored';
  /** The account a reversal suspended, or a reversal or a top-up (paying its debt) reactivated (key caches must hear of it). */
  statusChanged?: number;
}

export class CardPayments {
  readonly stripe: Stripe;

  constructor(
    private readonly settings: StripeSettings,
    private readonly db: Knex,
    private readonly log: Logger,
  ) {
    const base = settings.apiBase ? new URL(settings.apiBase) : null;
    // Loaded only when card payments are configured: the library is a few MB of memory a gateway without them does not need.
    const StripeLib = require('stripe') as typeof Stripe;
    this.stripe = new StripeLib(settings.secretKey, {
      maxNetworkRetries: 1,
      timeout: 20_000,
      telemetry: false,
      appInfo: { name: 'switchyard' },
      ...(base && {
        host: base.hostname,
        port: base.port || (base.protocol === 'http:' ? 80 : 443),
        protocol: base.protocol === 'http:' ? 'http' : 'https',
      }),
    });
  }

  /** A Checkout Session for one line item of `cents`; the browser is sent to its `url`. */
  async createCheckout(o: {
    accountId: number;
    email: string;
    cents: number;
    returnUrl: string;
  }): Promise<{ id: string; url: string }> {
    const session = await this.stripe.checkout.sessions.create({
      mode: 'payment',
      line_items: [
        {
          quantity: 1,
          price_data: {
            currency: 'usd',
            unit_amount: o.cents,
            product_data: { name: 'Switchyard credits', description: 'Prepaid USD credits for the Switchyard API' },
          },
        },
      ],
      metadata: { account_id: String(o.accountId) },
      client_reference_id: String(o.accountId),
      customer_email: o.email,
      success_url: `${o.returnUrl}?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${o.returnUrl}?checkout=cancelled`,
    });
    if (!session.url) throw new Error(`Stripe returned checkout session ${session.id} without a url`);
    return { id: session.id, url: session.url };
  }

  /** Verifies the signature over the raw body and credits a paid Checkout Session once. */
  async handleWebhook(raw: Buffer, signature: string | undefined): Promise<WebhookResult> {
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(raw, signature ?? '', this.settings.webhookSecret);
    } catch (e) {
      throw new SignatureError(`Invalid Stripe signature: ${(e as Error).message}`);
    }
    if (event.type.startsWith('charge.') || event.type.startsWith('refund.')) return this.reversal(event);
    if (event.type !== 'checkout.session.completed' && event.type !== 'checkout.session.async_payment_succeeded') {
      return { received: true, outcome: 'ignored' };
    }
    const session = event.data.object as Stripe.Checkout.Session;
    const accountId = Number(session.metadata?.account_id);
    const ignore = (why: string): WebhookResult => {
      this.log.warn({ event: event.id, session: session.id, why }, 'stripe checkout session not credited');
      return { received: true, outcome: 'ignored' };
    };
    if (session.payment_status !== 'paid') return { received: true, outcome: 'ignored' }; // an async payment: wait for its success event
    if (session.currency !== 'usd') return ignore(`currency ${session.currency}`);
    if (!Number.isSafeInteger(accountId) || accountId <= 0) return ignore('no account_id in the metadata');
    if (!session.amount_total || session.amount_total <= 0) return ignore('no amount');
    if (!(await this.db('accounts').where('id', accountId).first('id'))) return ignore(`no account ${accountId}`);
    const amountMicros = session.amount_total * MICROS_PER_CENT;
    const paymentIntent =
      typeof session.payment_intent === 'string' ? session.payment_intent : (session.payment_intent?.id ?? null);
    let changed = false;
    try {
      changed = await transact(this.db, async (trx) => {
        const row = await postWithin(trx, {
          accountId,
          kind: 'topup',
          amountMicros,
          ref: session.id,
          note: `stripe ${event.id}`,
        });
        if (!row) throw new Error(`account ${accountId} not found`);
        let suspended = false;
        if (paymentIntent) {
          await recordCardPayment(trx, { paymentIntent, accountId, sessionId: session.id, amountMicros });
          suspended = await applyPendingReversals(trx, paymentIntent); // refunds or disputes of it that arrived first
        }
        const paid = await payDebtWithin(trx, accountId, `ledger_${row.id}`, `topup ${session.id}`); // then what the account owes
        return suspended || paid.reactivated;
      });
    } catch (e) {
      if (isUniqueViolation(e)) return { received: true, outcome: 'duplicate' };
      throw e;
    }
    this.log.info(
      { event: event.id, session: session.id, account: accountId, cents: session.amount_total },
      'card top-up credited',
    );
    return { received: true, outcome: 'credited', ...(changed && { statusChanged: accountId }) };
  }

  /** A refund or a dispute of a card top-up, or a refund of it that failed (see reversals.ts). */
  private async reversal(event: Stripe.Event): Promise<WebhookResult> {
    const intentOf = (v: string | { id: string } | null | undefined) => (typeof v === 'string' ? v : (v?.id ?? null));
    let done: Reversal = { outcome: 'ignored' };
    if (event.type === 'charge.refunded') {
      const charge = event.data.object as Stripe.Charge;
      const pi = intentOf(charge.payment_intent);
      if (pi && charge.currency === 'usd')
        done = await takeBack(this.db, {
          paymentIntent: pi,
          kind: 'card_refund',
          ref: `refund_${pi}_${event.id}`,
          amountMicros: charge.amount_refunded * MICROS_PER_CENT,
        });
    } else if (
      event.type === 'charge.refund.updated' ||
      event.type === 'refund.updated' ||
      event.type === 'refund.failed'
    ) {
      const refund = event.data.object as Stripe.Refund;
      const pi = intentOf(refund.payment_intent);
      if (pi && refund.currency === 'usd' && refund.status === 'failed')
        done = await refundFailed(this.db, {
          paymentIntent: pi,
          refundRef: `refund_failed_${refund.id}`,
          amountMicros: refund.amount * MICROS_PER_CENT,
        });
    } else if (event.type.startsWith('charge.dispute.')) {
      const dispute = event.data.object as Stripe.Dispute;
      const pi = intentOf(dispute.payment_intent);
      const action = disputeAction(event.type, dispute.status);
      const ref = `dispute_${dispute.id}`;
      if (pi && dispute.currency === 'usd' && action === 'take')
        done = await takeBack(this.db, {
          paymentIntent: pi,
          kind: 'dispute',
          ref,
          amountMicros: dispute.amount * MICROS_PER_CENT,
        });
      if (pi && dispute.currency === 'usd' && action === 'give')
        done = await giveBack(this.db, { paymentIntent: pi, disputeRef: ref });
    }
    if (done.outcome !== 'ignored')
      this.log.warn(
        { event: event.id, type: event.type, account: done.accountId, outcome: done.outcome },
        'card payment came back',
      );
    return {
      received: true,
      outcome: done.outcome,
      ...(done.statusChanged && done.accountId !== undefined && { statusChanged: done.accountId }),
    };
  }
}

/**
 * What a dispute event means for the money. A dispute withdraws the funds when it is opened (`created`,
 * `funds_withdrawn`) — except an inquiry (statuses `warning_*`: the issuer only asks questions, nothing is withdrawn;
 * should it escalate, `funds_withdrawn` follows) — and when it is lost, if that was not seen yet; a won one
 * (`funds_reinstated`, `closed` as won) gives them back. Anything else (an inquiry closed, updates) moves nothing.
 */
function disputeAction(type: string, status: string): 'take' | 'give' | null {
  if (type === 'charge.dispute.funds_withdrawn') return 'take';
  if (type === 'charge.dispute.created') return status.startsWith('warning_') ? null : 'take';
  if (type === 'charge.dispute.funds_reinstated') return 'give';
  if (type === 'charge.dispute.closed') return status === 'won' ? 'give' : status === 'lost' ? 'take' : null;
  return null;
}
