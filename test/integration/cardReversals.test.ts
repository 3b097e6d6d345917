/**
 * Card payments that come back (Stripe events signed as Stripe signs them, with the `stripe` library's own helper):
 * a refund or a dispute takes its money back from the account the payment credited, once per event, in any order,
 * never beyond the payment; spent credits become debt and suspend the account (keys refused, log-in refused); a won
 * dispute gives the money back and, when the debt is cleared, reactivates the account.
 */
import Stripe from 'stripe';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/app';
import { registered, type ConsoleClient } from '../helpers/console';
import { checkoutEvent, disputeEvent, paymentIntentOf, refundEvent } from '../fakes/stripeApi';
import { verifyLedger } from '../../src/billing/verify';
import { post } from '../../src/db/ledger';

const WEBHOOK_SECRET = 'whsec_test_reversals0123456789';
/** Dispute ids of this run (the MariaDB database outlives a run). */
const dp = (n: number) => `dp_${n}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
let gw: TestGateway;
const signer = new Stripe('sk_test_unused');

beforeAll(async () => {
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
console: { registrations_per_address: 0 }
providers: { local: { type: mock } }
models: [ { id: m, kind: chat, price: { input: 1000, output: 1000 }, routes: [ { provider: local } ] } ]
`,
    { ...process.env, STRIPE_SECRET_KEY: 'sk_test_reversals', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET },
  );
});

afterAll(() => gw?.close());

const deliver = (event: unknown) => {
  const payload = JSON.stringify(event);
  return fetch(`${gw.url}/console/api/stripe/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) },
    body: payload,
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
};
const db = () => gw.app.db;
const balance = async (id: number) => Number((await db()('accounts').where('id', id).first()).balance_micros);

/** A verified account that paid `cents` by card; returns it and the payment intent. */
async function paidBy(cents: number): Promise<{ c: ConsoleClient; pi: string }> {
  const c = await registered(gw.url); // 1 USD starter credits
  const session = { id: `cs_test_${Math.random().toString(36).slice(2)}`, object: 'checkout.session', amount_total: cents, currency: 'usd', metadata: { account_id: String(c.account.id) } };
  expect((await deliver(checkoutEvent(session))).body.outcome).toBe('credited');
  return { c, pi: paymentIntentOf(session.id) };
}

test('a refund takes its amount back once, whatever the order of the cumulative events', async () => {
  const { c, pi } = await paidBy(2500);
  expect(await balance(c.account.id)).toBe(26_000_000);
  const ten = refundEvent(pi, 2500, 1000);
  const thirty = refundEvent(pi, 2500, 1500);
  expect((await deliver(thirty)).body.outcome).toBe('reversed'); // the later event first: 15 USD so far
  expect((await deliver(ten)).body.outcome).toBe('reversed'); // the older one takes nothing more
  expect((await deliver(thirty)).body.outcome).toBe('duplicate');
  expect(await balance(c.account.id)).toBe(11_000_000);
  const rows = await db()('ledger').where({ account_id: c.account.id, kind: 'card_refund' });
  expect(rows.map((r) => Number(r.amount_micros))).toEqual([-15_000_000]);
  expect((await deliver(refundEvent(pi, 2500, 2500))).body.outcome).toBe('reversed'); // the rest
  expect(await balance(c.account.id)).toBe(1_000_000);
  expect((await deliver(refundEvent(pi, 2500, 9999))).body.outcome).toBe('reversed'); // never beyond the payment
  expect(await balance(c.account.id)).toBe(1_000_000);
  expect((await verifyLedger(db())).problems.filter((p) => p.account_id === c.account.id)).toEqual([]);
});

test('credits already spent: the balance stops at zero, the rest is debt, the account is suspended; a won dispute brings it back', async () => {
  const { c, pi } = await paidBy(500); // 1 + 5 USD
  const dp1 = dp(1);
  const { secret } = (await c.post('/console/api/keys', { name: 'k' })).body;
  const sdk = new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'spend it' }], max_tokens: 100 });
  await gw.settled();
  // most of the rest spent too (as if by many requests: an adjustment keeps the test short)
  await post(db(), { accountId: c.account.id, kind: 'adjustment', amountMicros: -5_500_000, note: 'spent' });
  const left = await balance(c.account.id);
  const spent = 6_000_000 - left;
  // a dispute of the whole payment: what is left goes, the rest is owed
  expect((await deliver(disputeEvent('charge.dispute.created', pi, dp1, 500))).body.outcome).toBe('reversed');
  expect(await balance(c.account.id)).toBe(0);
  const account = await db()('accounts').where('id', c.account.id).first();
  expect({ debt: Number(account.debt_micros), status: account.status }).toEqual({ debt: 5_000_000 - left, status: 'disabled' });
  expect(spent).toBeGreaterThan(1_000_000); // the test spent more than the starter credits, so some is owed
  expect((await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e)).status).toBe(401);
  expect((await registeredLogin(c)).status).toBe(403);
  expect((await deliver(disputeEvent('charge.dispute.funds_withdrawn', pi, dp1, 500))).body.outcome).toBe('duplicate');
  // won: what was taken comes back, the debt is cleared, the account works again
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, dp1, 500, 'won'))).body.outcome).toBe('returned');
  expect(await balance(c.account.id)).toBe(left);
  const after = await db()('accounts').where('id', c.account.id).first();
  expect({ debt: Number(after.debt_micros), status: after.status }).toEqual({ debt: 0, status: 'active' });
  expect((await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 5 })).choices).toHaveLength(1);
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, dp1, 500, 'won'))).body.outcome).toBe('duplicate');
  expect((await verifyLedger(db())).problems.filter((p) => p.account_id === c.account.id)).toEqual([]);
});

test('a dispute won before it was opened here takes nothing; a lost one is taken once; unknown payments are ignored', async () => {
  const { c, pi } = await paidBy(1000);
  const [dp2, dp3] = [dp(2), dp(3)];
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, dp2, 1000, 'won'))).body.outcome).toBe('returned');
  expect((await deliver(disputeEvent('charge.dispute.created', pi, dp2, 1000))).body.outcome).toBe('duplicate');
  expect(await balance(c.account.id)).toBe(11_000_000);
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, dp3, 400, 'lost'))).body.outcome).toBe('reversed');
  expect((await deliver(disputeEvent('charge.dispute.created', pi, dp3, 400))).body.outcome).toBe('duplicate');
  expect(await balance(c.account.id)).toBe(7_000_000);
  expect((await deliver(refundEvent('pi_unknown000000000000000', 100, 100))).body.outcome).toBe('ignored');
});

async function registeredLogin(c: ConsoleClient & { email?: string }) {
  const { ConsoleClient: Client, PASSWORD } = await import('../helpers/console');
  return new Client(gw.url).login((c as any).email ?? c.account.email, PASSWORD);
}
