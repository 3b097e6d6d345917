/**
 * Card payments that come back (Stripe events signed as Stripe signs them, with the `stripe` library's own helper):
 * a refund or a dispute takes its money back from the account the payment credited, once per event, in any order,
 * never beyond the payment; spent credits become debt and suspend the account (keys refused, log-in refused); a won
 * dispute gives the money back and, when the debt is cleared, reactivates the account. Money owed comes back first:
 * a top-up (card, code, admin grant) pays the debt before it adds to the balance, and a refund that fails gives back
 * what it took, once.
 */
import Stripe from 'stripe';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/app';
import { ConsoleClient, registered } from '../helpers/console';
import { checkoutEvent, disputeEvent, paymentIntentOf, refundEvent, refundUpdateEvent } from '../fakes/stripeApi';
import { verifyLedger } from '../../src/billing/verify';
import { createCodes } from '../../src/billing/redemption';
import { post } from '../../src/db/ledger';

const WEBHOOK_SECRET = 'whsec_test_reversals0123456789';
const ADMIN_TOKEN = 'admin-token-for-reversal-tests-01';
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
    { ...process.env, STRIPE_SECRET_KEY: 'sk_test_reversals', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, ADMIN_TOKEN },
  );
});

afterAll(() => gw?.close());

const deliver = (event: unknown) => {
  const payload = JSON.stringify(event);
  return fetch(`${gw.url}/console/api/stripe/webhook`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'stripe-signature': signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }),
    },
    body: payload,
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
};
const db = () => gw.app.db;
const balance = async (id: number) => Number((await db()('accounts').where('id', id).first()).balance_micros);

/** A verified account that paid `cents` by card; returns it and the payment intent. */
async function paidBy(cents: number): Promise<{ c: ConsoleClient; pi: string }> {
  const c = await registered(gw.url); // 1 USD starter credits
  const session = {
    id: `cs_test_${Math.random().toString(36).slice(2)}`,
    object: 'checkout.session',
    amount_total: cents,
    currency: 'usd',
    metadata: { account_id: String(c.account.id) },
  };
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
  expect({ debt: Number(account.debt_micros), status: account.status }).toEqual({
    debt: 5_000_000 - left,
    status: 'disabled',
  });
  const adminView = await fetch(`${gw.url}/admin/api/accounts?email=${encodeURIComponent(c.account.email)}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  }).then((r) => r.json() as Promise<any>);
  expect(adminView.data[0]).toMatchObject({
    status: 'disabled',
    balance_usd: '0.000000',
    debt_usd: ((5_000_000 - left) / 1e6).toFixed(6),
  }); // the admin sees what is owed
  expect(spent).toBeGreaterThan(1_000_000); // the test spent more than the starter credits, so some is owed
  expect(
    (await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e))
      .status,
  ).toBe(401);
  expect((await registeredLogin(c)).status).toBe(403);
  expect((await deliver(disputeEvent('charge.dispute.funds_withdrawn', pi, dp1, 500))).body.outcome).toBe('duplicate');
  // won: what was taken comes back, the debt is cleared, the account works again
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, dp1, 500, 'won'))).body.outcome).toBe('returned');
  expect(await balance(c.account.id)).toBe(left);
  const after = await db()('accounts').where('id', c.account.id).first();
  expect({ debt: Number(after.debt_micros), status: after.status }).toEqual({ debt: 0, status: 'active' });
  expect(
    (await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 5 }))
      .choices,
  ).toHaveLength(1);
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, dp1, 500, 'won'))).body.outcome).toBe('duplicate');
  expect((await verifyLedger(db())).problems.filter((p) => p.account_id === c.account.id)).toEqual([]);
});

test('a dispute won before it was opened here takes nothing; a lost one is taken once; a refund of an unknown payment is kept for later', async () => {
  const { c, pi } = await paidBy(1000);
  const [dp2, dp3] = [dp(2), dp(3)];
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, dp2, 1000, 'won'))).body.outcome).toBe('returned');
  expect((await deliver(disputeEvent('charge.dispute.created', pi, dp2, 1000))).body.outcome).toBe('duplicate');
  expect(await balance(c.account.id)).toBe(11_000_000);
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, dp3, 400, 'lost'))).body.outcome).toBe('reversed');
  expect((await deliver(disputeEvent('charge.dispute.created', pi, dp3, 400))).body.outcome).toBe('duplicate');
  expect(await balance(c.account.id)).toBe(7_000_000);
  expect((await deliver(refundEvent(`pi_unknown${Date.now()}`, 100, 100))).body.outcome).toBe('pending'); // kept until its payment is credited
});

test('a refund or a dispute that arrives before its payment was credited is applied when it is, once', async () => {
  const c = await registered(gw.url); // 1 USD
  const session = {
    id: `cs_test_${Math.random().toString(36).slice(2)}`,
    object: 'checkout.session',
    amount_total: 3000,
    currency: 'usd',
    metadata: { account_id: String(c.account.id) },
  };
  const pi = paymentIntentOf(session.id);
  const refund = refundEvent(pi, 3000, 1000);
  const dispute = disputeEvent('charge.dispute.created', pi, dp(4), 500);
  expect((await deliver(refund)).body.outcome).toBe('pending');
  expect((await deliver(refund)).body.outcome).toBe('duplicate');
  expect((await deliver(dispute)).body.outcome).toBe('pending');
  expect(await balance(c.account.id)).toBe(1_000_000);
  // the payment comes in late: 30 USD credited, 10 refunded and 5 disputed taken back at once
  expect((await deliver(checkoutEvent(session))).body.outcome).toBe('credited');
  expect(await balance(c.account.id)).toBe(16_000_000);
  expect((await deliver(refund)).body.outcome).toBe('duplicate');
  expect((await deliver(dispute)).body.outcome).toBe('duplicate');
  expect((await deliver(checkoutEvent(session))).body.outcome).toBe('duplicate');
  expect(await balance(c.account.id)).toBe(16_000_000);
  const kinds = (await db()('ledger').where({ account_id: c.account.id }).orderBy('id')).map((r) => [
    r.kind,
    Number(r.amount_micros),
  ]);
  expect(kinds.slice(-3)).toEqual([
    ['topup', 30_000_000],
    ['card_refund', -10_000_000],
    ['dispute', -5_000_000],
  ]);
  expect((await verifyLedger(db())).problems.filter((p) => p.account_id === c.account.id)).toEqual([]);
});

test('an inquiry withdraws nothing; when it escalates the funds are taken once; a won dispute no longer counts against a later refund', async () => {
  const { c, pi } = await paidBy(2000); // 1 + 20 USD
  const inquiry = dp(5);
  expect(
    (await deliver(disputeEvent('charge.dispute.created', pi, inquiry, 2000, 'warning_needs_response'))).body.outcome,
  ).toBe('ignored');
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, inquiry, 2000, 'warning_closed'))).body.outcome).toBe(
    'ignored',
  );
  expect(await balance(c.account.id)).toBe(21_000_000);
  const escalated = dp(6);
  expect(
    (await deliver(disputeEvent('charge.dispute.created', pi, escalated, 2000, 'warning_needs_response'))).body.outcome,
  ).toBe('ignored');
  expect(
    (await deliver(disputeEvent('charge.dispute.funds_withdrawn', pi, escalated, 2000, 'needs_response'))).body.outcome,
  ).toBe('reversed');
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, escalated, 2000, 'lost'))).body.outcome).toBe(
    'duplicate',
  );
  expect(await balance(c.account.id)).toBe(1_000_000);
  // another payment: disputed, won (funds_reinstated first, then closed), then refunded in part by the operator
  const other = await paidBy(1000);
  const won = dp(7);
  expect((await deliver(disputeEvent('charge.dispute.created', other.pi, won, 1000))).body.outcome).toBe('reversed');
  expect(
    (await deliver(disputeEvent('charge.dispute.funds_reinstated', other.pi, won, 1000, 'won'))).body.outcome,
  ).toBe('returned');
  expect((await deliver(disputeEvent('charge.dispute.closed', other.pi, won, 1000, 'won'))).body.outcome).toBe(
    'duplicate',
  );
  expect(await balance(other.c.account.id)).toBe(11_000_000);
  expect((await deliver(refundEvent(other.pi, 1000, 400))).body.outcome).toBe('reversed');
  expect(await balance(other.c.account.id)).toBe(7_000_000);
  for (const id of [c.account.id, other.c.account.id])
    expect((await verifyLedger(db())).problems.filter((p) => p.account_id === id)).toEqual([]);
});

test('refund events delivered at the same time take the cumulative amount once, and the same event twice at once is taken once', async () => {
  const { c, pi } = await paidBy(5000); // 1 + 50 USD
  const events = [refundEvent(pi, 5000, 1000), refundEvent(pi, 5000, 2500), refundEvent(pi, 5000, 4000)];
  const outcomes = (await Promise.all([...events, ...events].map(deliver))).map((r) => r.body.outcome).sort();
  expect(outcomes).toEqual(['duplicate', 'duplicate', 'duplicate', 'reversed', 'reversed', 'reversed']);
  expect(await balance(c.account.id)).toBe(11_000_000); // 51 − 40: the most refunded so far, once
  const disputes = Array.from({ length: 4 }, () => disputeEvent('charge.dispute.created', pi, 'dp_same_' + pi, 1000));
  const results = (await Promise.all(disputes.map(deliver))).map((r) => r.body.outcome).sort();
  expect(results).toEqual(['duplicate', 'duplicate', 'duplicate', 'reversed']);
  expect(await balance(c.account.id)).toBe(1_000_000); // what is left of the payment (10 USD), once
  expect((await verifyLedger(db())).problems.filter((p) => p.account_id === c.account.id)).toEqual([]);
});

/** The account's balance, debt and status. */
async function standing(id: number) {
  const a = await db()('accounts').where('id', id).first();
  return { balance: Number(a.balance_micros), debt: Number(a.debt_micros), status: a.status };
}
/** The account's last `n` ledger rows, oldest first: [kind, amount, balance after]. */
const lastRows = async (id: number, n: number) =>
  (await db()('ledger').where('account_id', id).orderBy('id', 'desc').limit(n))
    .reverse()
    .map((r) => [r.kind, Number(r.amount_micros), Number(r.balance_after)]);
const admin = (path: string, body: unknown) =>
  fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
const chat = (sdk: OpenAI) =>
  sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 5 }).then(
    () => 200,
    (e) => e.status as number,
  );
const checkout = (accountId: number, cents: number) => ({
  id: `cs_test_${Math.random().toString(36).slice(2)}`,
  object: 'checkout.session',
  amount_total: cents,
  currency: 'usd',
  metadata: { account_id: String(accountId) },
});

/** An account that paid 5 USD by card, spent all it had (6 USD) and lost the payment to a dispute: it owes 5 USD, suspended. */
async function indebted(): Promise<{
  c: ConsoleClient & { email?: string };
  pi: string;
  dispute: string;
  sdk: OpenAI;
}> {
  const { c, pi } = await paidBy(500);
  const { secret } = (await c.post('/console/api/keys', { name: 'k' })).body;
  const sdk = new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  await post(db(), { accountId: c.account.id, kind: 'adjustment', amountMicros: -6_000_000, note: 'spent' });
  const dispute = dp(8);
  expect((await deliver(disputeEvent('charge.dispute.created', pi, dispute, 500))).body.outcome).toBe('reversed');
  expect(await standing(c.account.id)).toEqual({ balance: 0, debt: 5_000_000, status: 'disabled' });
  return { c, pi, dispute, sdk };
}

test('a top-up to an account that owes pays the debt first, and the ledger shows both: an admin grant, then a card payment', async () => {
  const { c, sdk } = await indebted();
  const id = c.account.id;
  const grant = await admin(`/admin/api/accounts/${id}/credits`, { usd: '2' });
  expect(grant.body).toMatchObject({ kind: 'grant', amount_usd: '2.000000', balance_usd: '0.000000' });
  expect(await lastRows(id, 2)).toEqual([
    ['grant', 2_000_000, 2_000_000],
    ['debt_payment', -2_000_000, 0],
  ]);
  expect(await standing(id)).toEqual({ balance: 0, debt: 3_000_000, status: 'disabled' }); // still owes: still suspended
  expect(await chat(sdk)).toBe(401);
  // a card payment (a Checkout Session begun before the dispute, paid late): the rest of the debt, then the balance
  expect(
    (await deliver(checkoutEvent(checkout(id, 1000), { type: 'checkout.session.async_payment_succeeded' }))).body,
  ).toEqual({ received: true, outcome: 'credited' });
  expect(await lastRows(id, 2)).toEqual([
    ['topup', 10_000_000, 10_000_000],
    ['debt_payment', -3_000_000, 7_000_000],
  ]);
  expect(await standing(id)).toEqual({ balance: 7_000_000, debt: 0, status: 'active' }); // nothing owed: active again
  expect(await chat(sdk)).toBe(200);
  expect((await registeredLogin(c)).status).toBe(200);
  expect((await verifyLedger(db())).problems.filter((p) => p.account_id === id)).toEqual([]);
});

test('a redeemed code pays what is owed first; an account an admin disabled stays disabled when its debt is paid', async () => {
  const { c } = await indebted();
  const id = c.account.id;
  expect((await admin(`/admin/api/accounts/${id}/enable`, {})).status).toBe(200); // the admin lets it in while it owes
  const user = new ConsoleClient(gw.url);
  expect((await user.login(c.email!)).status).toBe(200);
  const [code] = await createCodes(db(), 1, 1_000_000);
  expect((await user.post('/console/api/topup/redeem', { code: code.code })).body).toEqual({
    amount_usd: '1.000000',
    balance_usd: '0.000000',
  });
  expect(await lastRows(id, 2)).toEqual([
    ['redemption', 1_000_000, 1_000_000],
    ['debt_payment', -1_000_000, 0],
  ]);
  expect(await standing(id)).toEqual({ balance: 0, debt: 4_000_000, status: 'active' });
  const seen = (await user.get('/console/api/ledger?limit=2')).body.data; // the owner sees both, newest first
  expect(seen.map((r: any) => [r.kind, r.amount_usd, r.balance_after_usd])).toEqual([
    ['debt_payment', '-1.000000', '0.000000'],
    ['redemption', '1.000000', '1.000000'],
  ]);
  // disabled by the admin (not for the debt): paying what it owes does not let it back in
  expect((await admin(`/admin/api/accounts/${id}/disable`, {})).status).toBe(200);
  expect((await admin(`/admin/api/accounts/${id}/credits`, { usd: '10' })).body.balance_usd).toBe('6.000000');
  expect(await standing(id)).toEqual({ balance: 6_000_000, debt: 0, status: 'disabled' });
  expect((await verifyLedger(db())).problems.filter((p) => p.account_id === id)).toEqual([]);
});

test('a dispute won after a top-up paid part of its debt gives back what was paid, and cancels the rest', async () => {
  const { c, pi, dispute, sdk } = await indebted();
  const id = c.account.id;
  await admin(`/admin/api/accounts/${id}/credits`, { usd: '2' }); // pays 2 of the 5 owed
  expect(await standing(id)).toEqual({ balance: 0, debt: 3_000_000, status: 'disabled' });
  expect((await deliver(disputeEvent('charge.dispute.closed', pi, dispute, 500, 'won'))).body.outcome).toBe('returned');
  expect(await lastRows(id, 1)).toEqual([['dispute_won', 2_000_000, 2_000_000]]);
  expect(await standing(id)).toEqual({ balance: 2_000_000, debt: 0, status: 'active' });
  expect(await chat(sdk)).toBe(200);
  expect((await verifyLedger(db())).problems.filter((p) => p.account_id === id)).toEqual([]);
});

test('a refund that fails gives back what it took, once, however often and in whatever form the failure arrives', async () => {
  const { c, pi } = await paidBy(2000); // 1 + 20 USD
  const id = c.account.id;
  const re = `re_${pi.slice(3)}_1`;
  const refunded = refundEvent(pi, 2000, 1000);
  expect((await deliver(refunded)).body.outcome).toBe('reversed');
  expect(await balance(id)).toBe(11_000_000);
  expect((await deliver(refundUpdateEvent(pi, re, 1000, 'succeeded'))).body.outcome).toBe('ignored');
  const failed = refundUpdateEvent(pi, re, 1000);
  expect((await deliver(failed)).body.outcome).toBe('returned');
  expect(await lastRows(id, 1)).toEqual([['refund_failed', 10_000_000, 21_000_000]]);
  expect((await deliver(failed)).body.outcome).toBe('duplicate'); // a retry
  expect((await deliver(refundUpdateEvent(pi, re, 1000))).body.outcome).toBe('duplicate'); // another event of the same failure
  expect((await deliver(refundUpdateEvent(pi, re, 1000, 'failed', { type: 'refund.failed' }))).body.outcome).toBe(
    'duplicate',
  );
  expect((await deliver(refunded)).body.outcome).toBe('duplicate'); // the refund's event replayed
  expect((await deliver(refundEvent(pi, 2000, 1000))).body.outcome).toBe('reversed'); // an older event of it, late: takes nothing
  expect(await balance(id)).toBe(21_000_000);
  expect((await deliver(refundEvent(pi, 2000, 1500))).body.outcome).toBe('reversed'); // another refund, of 5 USD
  expect(await balance(id)).toBe(16_000_000);
  const rows = await db()('ledger')
    .where({ account_id: id })
    .whereIn('kind', ['card_refund', 'refund_failed'])
    .orderBy('id');
  expect(rows.map((r) => [r.kind, Number(r.amount_micros)])).toEqual([
    ['card_refund', -10_000_000],
    ['refund_failed', 10_000_000],
    ['card_refund', -5_000_000],
  ]);
  // that one fails too, and its events arrive at the same moment: given back once
  const re2 = `re_${pi.slice(3)}_2`;
  const failures = [
    refundUpdateEvent(pi, re2, 500),
    refundUpdateEvent(pi, re2, 500),
    refundUpdateEvent(pi, re2, 500, 'failed', { type: 'refund.failed' }),
  ];
  expect((await Promise.all(failures.map(deliver))).map((r) => r.body.outcome).sort()).toEqual([
    'duplicate',
    'duplicate',
    'returned',
  ]);
  expect(await balance(id)).toBe(21_000_000);
  expect((await verifyLedger(db())).problems.filter((p) => p.account_id === id)).toEqual([]);
});

test('a failed refund that had made debt cancels it and reactivates the account; a failure that arrives before its refund, or its payment, leaves nothing to take', async () => {
  const { c, pi } = await paidBy(500); // 1 + 5 USD
  const id = c.account.id;
  await post(db(), { accountId: id, kind: 'adjustment', amountMicros: -4_000_000, note: 'spent' });
  expect((await deliver(refundEvent(pi, 500, 500))).body.outcome).toBe('reversed');
  expect(await standing(id)).toEqual({ balance: 0, debt: 3_000_000, status: 'disabled' });
  expect((await deliver(refundUpdateEvent(pi, `re_${pi.slice(3)}`, 500))).body.outcome).toBe('returned');
  expect(await lastRows(id, 1)).toEqual([['refund_failed', 2_000_000, 2_000_000]]); // what was taken of the balance; the debt is cancelled
  expect(await standing(id)).toEqual({ balance: 2_000_000, debt: 0, status: 'active' });
  // the failure first, then (late) the refund it undoes: nothing is taken
  const other = await paidBy(1000);
  expect((await deliver(refundUpdateEvent(other.pi, `re_${other.pi.slice(3)}`, 400))).body.outcome).toBe('returned');
  expect((await deliver(refundEvent(other.pi, 1000, 400))).body.outcome).toBe('reversed');
  expect(await balance(other.c.account.id)).toBe(11_000_000);
  // a refund and its failure, both before the payment was credited: when it is, nothing is taken
  const late = await registered(gw.url);
  const session = checkout(late.account.id, 1000);
  const lpi = paymentIntentOf(session.id);
  expect((await deliver(refundEvent(lpi, 1000, 1000))).body.outcome).toBe('pending');
  expect((await deliver(refundUpdateEvent(lpi, `re_${lpi.slice(3)}`, 1000))).body.outcome).toBe('pending');
  expect((await deliver(checkoutEvent(session))).body.outcome).toBe('credited');
  expect(await balance(late.account.id)).toBe(11_000_000);
  for (const a of [id, other.c.account.id, late.account.id])
    expect((await verifyLedger(db())).problems.filter((p) => p.account_id === a)).toEqual([]);
});

async function registeredLogin(c: ConsoleClient & { email?: string }) {
  const { ConsoleClient: Client, PASSWORD } = await import('../helpers/console');
  return new Client(gw.url).login((c as any).email ?? c.account.email, PASSWORD);
}
