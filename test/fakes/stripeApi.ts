/**
 * A fake Stripe API on loopback, for the official `stripe` library pointed at it with STRIPE_API_BASE (the
 * library's host/port/protocol options). It answers `POST /v1/checkout/sessions` as Stripe does: a form-encoded
 * request (`line_items[0][price_data][unit_amount]=2500`...) and a `checkout.session` object in JSON. Anything else
 * gets Stripe's 404 error shape. `failNext` (or `POST /_test/fail-next?n=N` from another process) makes the next
 * calls fail with a 500 api_error.
 *
 * `node --import tsx test/fakes/stripeApi.ts` serves it on a free port and prints the base URL (contract run).
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StripeCall {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The form fields as sent, e.g. `{'line_items[0][quantity]': '1', mode: 'payment'}`. */
  form: Record<string, string>;
}

export class FakeStripe {
  readonly calls: StripeCall[] = [];
  readonly sessions = new Map<string, Record<string, unknown>>();
  failNext = 0;
  url = '';
  private server!: http.Server;

  async start(port = 0): Promise<this> {
    this.server = http.createServer((req, res) => {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (d) => (text += d));
      req.on('end', () => this.answer(req, res, text));
    });
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private answer(req: http.IncomingMessage, res: http.ServerResponse, text: string): void {
    const form = Object.fromEntries(new URLSearchParams(text));
    const path = (req.url ?? '').split('?')[0];
    this.calls.push({ method: req.method ?? '', path, headers: req.headers, form });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, {
        'content-type': 'application/json',
        'request-id': `req_${crypto.randomBytes(8).toString('hex')}`,
      });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'POST' && path === '/_test/fail-next') {
      // Not Stripe: lets a test in another process (the contract run) make the next calls fail.
      this.failNext += Number(new URL(req.url ?? '', 'http://x').searchParams.get('n') ?? 1);
      return send(200, { fail_next: this.failNext });
    }
    if (!/^Bearer sk_(test|live)_\w+$/.test(String(req.headers.authorization))) {
      return send(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } });
    }
    if (this.failNext > 0) {
      this.failNext--;
      return send(500, { error: { type: 'api_error', message: 'Something went wrong on our end' } });
    }
    if (req.method !== 'POST' || path !== '/v1/checkout/sessions') {
      return send(404, {
        error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${path})` },
      });
    }
    const amount =
      Number(form['line_items[0][price_data][unit_amount]']) * Number(form['line_items[0][quantity]'] ?? 1);
    const id = `cs_test_${crypto.randomBytes(24).toString('base64url')}`;
    const metadata = Object.fromEntries(
      Object.entries(form)
        .filter(([k]) => k.startsWith('metadata['))
        .map(([k, v]) => [k.slice('metadata['.length, -1), v]),
    );
    const session = {
      id,
      object: 'checkout.session',
      mode: form.mode,
      status: 'open',
      payment_status: 'unpaid',
      amount_subtotal: amount,
      amount_total: amount,
      currency: form['line_items[0][price_data][currency]'],
      client_reference_id: form.client_reference_id ?? null,
      customer_email: form.customer_email ?? null,
      metadata,
      success_url: form.success_url,
      cancel_url: form.cancel_url,
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      url: `https://checkout.stripe.com/c/pay/${id}`,
    };
    this.sessions.set(id, session);
    send(200, session);
  }
}

/** The event Stripe sends when a Checkout Session was paid (or `type` for another one). */
export function checkoutEvent(
  session: Record<string, unknown>,
  o: { type?: string; eventId?: string; paid?: boolean } = {},
): Record<string, unknown> {
  const paid = o.paid !== false;
  return event(
    o.type ?? 'checkout.session.completed',
    {
      payment_intent: paid ? paymentIntentOf(String(session.id)) : null,
      ...session,
      status: 'complete',
      payment_status: paid ? 'paid' : 'unpaid',
    },
    o.eventId,
  );
}

/** The payment intent Stripe made for a paid Checkout Session (here: derived from its id). */
export const paymentIntentOf = (sessionId: string) =>
  `pi_${crypto.createHash('sha256').update(sessionId).digest('hex').slice(0, 24)}`;

const event = (type: string, object: Record<string, unknown>, eventId?: string) => ({
  id: eventId ?? `evt_${crypto.randomBytes(12).toString('hex')}`,
  object: 'event',
  api_version: '2025-01-01',
  created: Math.floor(Date.now() / 1000),
  livemode: false,
  pending_webhooks: 1,
  request: { id: null, idempotency_key: null },
  type,
  data: { object },
});

/** charge.refunded: the charge of a payment intent, with all that was refunded of it so far (cents), as Stripe sends it. */
export function refundEvent(
  paymentIntent: string,
  amountCents: number,
  refundedCents: number,
  eventId?: string,
): Record<string, unknown> {
  return event(
    'charge.refunded',
    {
      id: `ch_${paymentIntent.slice(3)}`,
      object: 'charge',
      amount: amountCents,
      amount_refunded: refundedCents,
      currency: 'usd',
      payment_intent: paymentIntent,
      refunded: refundedCents >= amountCents,
      status: 'succeeded',
    },
    eventId,
  );
}

/**
 * charge.refund.updated (or `type`: refund.updated, refund.failed): one refund of a payment intent, `refundId`, of
 * `amountCents`, as Stripe sends it when its status changes — `failed` when the card could not take the money back.
 */
export function refundUpdateEvent(
  paymentIntent: string,
  refundId: string,
  amountCents: number,
  status = 'failed',
  o: { type?: string; eventId?: string } = {},
): Record<string, unknown> {
  const failed = status === 'failed';
  return event(
    o.type ?? 'charge.refund.updated',
    {
      id: refundId,
      object: 'refund',
      amount: amountCents,
      currency: 'usd',
      charge: `ch_${paymentIntent.slice(3)}`,
      payment_intent: paymentIntent,
      status,
      failure_reason: failed ? 'expired_or_canceled_card' : null,
      reason: 'requested_by_customer',
    },
    o.eventId,
  );
}

/** charge.dispute.created / funds_withdrawn / closed, for a dispute of `amountCents` on a payment intent. */
export function disputeEvent(
  type: string,
  paymentIntent: string,
  disputeId: string,
  amountCents: number,
  status = 'needs_response',
): Record<string, unknown> {
  return event(type, {
    id: disputeId,
    object: 'dispute',
    amount: amountCents,
    currency: 'usd',
    charge: `ch_${paymentIntent.slice(3)}`,
    payment_intent: paymentIntent,
    reason: 'fraudulent',
    status,
  });
}

if (require.main === module) {
  void new FakeStripe().start(Number(process.env.PORT ?? 0)).then((s) => process.stdout.write(`${s.url}\n`));
}
