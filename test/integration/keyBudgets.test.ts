/**
 * Key budgets per UTC day / week / month: enforced by the same conditional updates as the quota (holds, leases), so
 * concurrent requests never overshoot; a refusal is a 429 insufficient_quota naming the budget and when it resets;
 * the spend starts afresh in a new period. Set from the console API and the CLI. Runs on DATABASE_URL.
 */
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/app';
import { registered } from '../helpers/console';
import pino from 'pino';
import { periodEnd, periodStart } from '../../src/billing/budgets';
import { Billing } from '../../src/billing/billing';
import { verifyLedger } from '../../src/billing/verify';
import { createAccount } from '../../src/accounts/accounts';
import { createKey, getKey } from '../../src/accounts/keys';
import type { ModelConfig } from '../../src/config';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway(`
limits: { rpm: 0, tpm: 0 }
console: { registrations_per_address: 0 }
billing: { lease_idle_ms: 200 }
providers: { local: { type: mock } }
models: [ { id: m, kind: chat, price: { input: 300, output: 300 }, max_output_tokens: 50, routes: [ { provider: local } ] } ]
`);
});

afterAll(() => gw?.close());

test('periods are UTC calendar days, weeks from Monday, months', () => {
  const t = Date.UTC(2026, 10, 25, 13, 30); // Wednesday 25 November 2026
  expect(new Date(periodStart('day', t)).toISOString()).toBe('2026-11-25T00:00:00.000Z');
  expect(new Date(periodStart('week', t)).toISOString()).toBe('2026-11-23T00:00:00.000Z');
  expect(new Date(periodEnd('week', t)).toISOString()).toBe('2026-11-30T00:00:00.000Z');
  expect(new Date(periodEnd('month', t)).toISOString()).toBe('2026-12-01T00:00:00.000Z');
  expect(new Date(periodStart('week', Date.UTC(2026, 10, 29, 23))).toISOString()).toBe('2026-11-23T00:00:00.000Z'); // Sunday
});

test('a daily budget is never overshot by concurrent requests; the refusal names it and when it resets; a new day starts afresh', async () => {
  const c = await registered(gw.url);
  await gw.app.db('accounts').where('id', c.account.id).update({ balance_micros: 1_000_000_000 }); // plenty of money: the budget is what stops
  await gw.app.db('ledger').insert({
    account_id: c.account.id,
    kind: 'grant',
    amount_micros: 999_000_000,
    balance_after: 1_000_000_000,
    created_at: Date.now(),
  });
  const created = await c.post('/console/api/keys', { name: 'budgeted', budget: { usd: '0.10', period: 'day' } });
  expect(created.status).toBe(201);
  expect(created.body.key.budget).toEqual({
    usd: '0.100000',
    period: 'day',
    spent_usd: '0.000000',
    resets_at: new Date(periodEnd('day', Date.now())).toISOString(),
  });
  const sdk = new OpenAI({ apiKey: created.body.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  // each request holds up to ~(prompt + 50 output) × 1,000 µUSD and costs far less: the 0.10 USD budget covers a few
  const results = await Promise.all(
    Array.from({ length: 40 }, () =>
      sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).then(
        () => 200,
        (e) => e,
      ),
    ),
  );
  await gw.settled();
  const refused = results.filter((r) => r !== 200);
  expect(refused.length).toBeGreaterThan(0);
  expect(results.length - refused.length).toBeGreaterThan(0);
  const reset = new Date(periodEnd('day', Date.now())).toISOString();
  for (const e of refused) {
    expect(e.status).toBe(429);
    expect(e.error).toMatchObject({
      type: 'insufficient_quota',
      code: 'insufficient_quota',
      reason: 'key_budget',
      message: `Insufficient quota: this key's budget of 0.100000 USD per day is used up; it resets at ${reset}`,
    });
  }
  const key = await gw.app.db('api_keys').where('id', created.body.key.id).first();
  expect(Number(key.budget_used_micros)).toBeLessThanOrEqual(100_000);
  expect(Number(key.budget_used_micros)).toBe(Number(key.used_micros));
  const view = (await c.get('/console/api/keys')).body.data.find((k: any) => k.id === created.body.key.id);
  expect(view.budget.spent_usd).toBe((Number(key.budget_used_micros) / 1e6).toFixed(6));
  // yesterday's spend does not count today
  await gw.app
    .db('api_keys')
    .where('id', key.id)
    .update({ budget_start: periodStart('day', Date.now()) - 86_400_000 });
  await new Promise((r) => setTimeout(r, 400)); // the idle lease goes back
  expect(
    (await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })).choices,
  ).toHaveLength(1);
  await gw.settled();
  const after = await gw.app.db('api_keys').where('id', key.id).first();
  expect(Number(after.budget_start)).toBe(periodStart('day', Date.now()));
  expect(Number(after.budget_used_micros)).toBeLessThan(Number(key.budget_used_micros) + 1); // a fresh day: only today's request
  expect(Number(after.budget_used_micros)).toBeGreaterThan(0);
  // removed: no budget
  expect((await c.patch(`/console/api/keys/${key.id}`, { budget: null })).body.budget).toBeNull();
  expect((await verifyLedger(gw.app.db)).problems.filter((p) => p.account_id === c.account.id)).toEqual([]);
});

test("a budget set or changed counts what the key already spent this period (a month's spend, a week's on a switch from day)", async () => {
  const c = await registered(gw.url); // 1 USD
  const created = (await c.post('/console/api/keys', { name: 'late budget' })).body;
  const sdk = new OpenAI({ apiKey: created.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
  await gw.settled();
  const used = Number((await gw.app.db('api_keys').where('id', created.key.id).first()).used_micros);
  expect(used).toBeGreaterThan(0);
  const spent = (used / 1e6).toFixed(6);
  // a monthly budget of exactly what was spent: nothing more this month
  const set = await c.patch(`/console/api/keys/${created.key.id}`, { budget: { usd: spent, period: 'month' } });
  expect(set.body.budget).toMatchObject({ usd: spent, period: 'month', spent_usd: spent });
  const refused = await sdk.chat.completions
    .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 })
    .catch((e) => e);
  expect(refused.status).toBe(429);
  expect(refused.error.message).toMatch(/this key's budget of [\d.]+ USD per month is used up/);
  // to a weekly one (today's spend is this week's too): still counted
  expect(
    (await c.patch(`/console/api/keys/${created.key.id}`, { budget: { usd: '5', period: 'week' } })).body.budget
      .spent_usd,
  ).toBe(spent);
});

test('credit leases never let a key overshoot its budget or its quota, with two processes admitting at once', async () => {
  // Two Billing instances on one database are two gateway processes. A cheap model: 200 µUSD a request at worst,
  // so a 0.10 USD budget is worth leasing (a slice pays for ≥ 16 requests) and each process takes leases of it.
  const db = gw.app.db;
  const model = {
    ...gw.app.config.models[0],
    id: 'cheap',
    price: {
      input: 1_000_000,
      output: 1_000_000,
      cached_input: 1_000_000,
      cache_write: 1_000_000,
      cache_write_1h: 1_000_000,
    },
  } as ModelConfig;
  const processes = [0, 1].map(
    () => new Billing(db, { ...gw.app.config.billing, lease_idle_ms: 60_000 }, pino({ level: 'silent' })),
  );
  const account = await createAccount(
    db,
    `lease-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`,
    1_000_000_000,
  );
  const budgeted = (await createKey(db, { accountId: account.id, budget: { micros: 100_000, period: 'day' } })).key;
  const quoted = (await createKey(db, { accountId: account.id, quotaMicros: 70_000 })).key;
  let leased = 0;
  let served = 0; // µUSD the served requests cost
  const spend = async (key: typeof budgeted, n: number) => {
    const principal = { key, accountId: account.id };
    const outcomes = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        try {
          const a = await processes[i % 2].admit({
            requestId: `req_${key.id}_${i}_${Math.random()}`,
            principal,
            model,
            endpoint: 'chat',
            promptTokens: 100,
            outputTokens: 100,
            promptBytes: 400,
          });
          leased = Math.max(leased, Number((await db('leases').where('key_id', key.id).count({ n: '*' }))[0].n));
          // The whole hold: 100 output tokens, or the allowance it was lowered to when the money left was short of 200 µUSD
          // (what remains of the quota at the end need not be a multiple of 200: the leases are eighths of it).
          await a.settle({
            status: 200,
            used: {
              provider: 'local',
              counted: 'upstream',
              usage: { prompt: 100, completion: a.outputTokens, cached: 0, cacheWrite: 0, reasoning: 0 },
            },
          });
          served += 100 + a.outputTokens; // 1 µUSD a token
          return 'served';
        } catch (e) {
          return (e as { message: string }).message;
        }
      }),
    );
    await Promise.all(processes.map((p) => p.settled()));
    return outcomes;
  };
  const budgetRun = await spend(budgeted, 700); // 700 × 200 µUSD = 0.14 USD asked of a 0.10 USD budget
  const budgetServed = served;
  served = 0;
  const quotaRun = await spend(quoted, 500); // 0.10 USD asked of a 0.07 USD quota
  const quotaServed = served;
  await Promise.all(processes.map((p) => p.stop()));
  expect(leased).toBeGreaterThan(0); // leases were used, not only per-request holds
  const b = (await getKey(db, budgeted.id))!;
  const q = (await getKey(db, quoted.id))!;
  expect(b.budget_used_micros).toBeLessThanOrEqual(100_000);
  expect(b.used_micros).toBe(b.budget_used_micros);
  expect(budgetServed).toBe(b.used_micros); // every served request paid in full
  expect(
    budgetRun
      .filter((o) => o !== 'served')
      .every((m) => m.startsWith("Insufficient quota: this key's budget of 0.100000 USD per day is used up")),
  ).toBe(true);
  expect(budgetRun.filter((o) => o !== 'served').length).toBeGreaterThan(0);
  expect(q.used_micros).toBeLessThanOrEqual(70_000);
  expect(quotaServed).toBe(q.used_micros);
  expect(quotaRun.filter((o) => o !== 'served').every((m) => m === 'Insufficient quota')).toBe(true);
  expect({ budgetHeld: b.held_micros, quotaHeld: q.held_micros }).toEqual({ budgetHeld: 0, quotaHeld: 0 }); // leases went back
  expect((await db('ledger').where({ account_id: account.id, kind: 'shortfall' })).length).toBe(0);
  expect((await verifyLedger(db)).problems.filter((p) => p.account_id === account.id)).toEqual([]);
});
