/**
 * Usage at volume: the daily rollups equal the sums of the usage records after real paid traffic (chat, streams,
 * upstream errors) and after settlements of earlier days; the console's and the operator's usage answers are the
 * records' sums whether a range is whole days (rollups), a part of a day (records) or both; retention (`switchyard
 * usage prune`) deletes only the records past it and keeps the rollups, the ledger and every sum, and a pruned
 * request's receipt is a 404 that says why. On DATABASE_URL.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import OpenAI from 'openai';
import { createKey } from '../../src/accounts/keys';
import { writeSettlements, type Settlement } from '../../src/billing/store';
import { formatUsd } from '../../src/money';
import { usage } from '../../src/usage';
import { startGateway, type TestGateway } from '../helpers/app';
import { registered, type ConsoleClient } from '../helpers/console';

jest.setTimeout(60_000);

const TOKEN = 'admin-token-for-usage-rollup-tests-0123456789';
const ROOT = path.resolve(__dirname, '../..');
const DAY = 86_400_000;
/** Model ids of this file only: other files write to the same database at the same time. */
const PAID = `rollup-chat-${process.pid}`;
const DEAD = `rollup-dead-${process.pid}`;
const DEAD_PROVIDER = `rollupdead${process.pid}`;

let gw: TestGateway;
let customer: ConsoleClient & { email: string };
let accountId: number;
let keyId: number;
let secret: string;
/** Midnight (UTC) of today, when the file started. */
const today = Date.now() - (Date.now() % DAY);

beforeAll(async () => {
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
console: { registrations_per_address: 0 }
usage: { retention_days: 90 }
providers:
  local: { type: mock }
  ${DEAD_PROVIDER}: { type: openai, base_url: "http://127.0.0.1:9/v1" }
models:
  - { id: ${PAID}, kind: chat, price: { input: 1000, output: 2000 }, routes: [ { provider: local, model: mock-up } ] }
  - { id: ${DEAD}, kind: chat, price: { input: 1000, output: 2000 }, routes: [ { provider: ${DEAD_PROVIDER}, model: gone } ] }
`,
    { ...process.env, ADMIN_TOKEN: TOKEN },
  );
  customer = await registered(gw.url);
  accountId = customer.account.id;
  expect((await admin('POST', `/admin/api/accounts/${accountId}/credits`, { usd: '20', note: 'rollups' })).status).toBe(
    200,
  );
  const made = await createKey(gw.app.db, { accountId, name: 'rollup key' });
  [secret, keyId] = [made.secret, made.key.id];
  await paidTraffic();
  await earlierDays();
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

/** Chat, streams and requests whose upstream is down, through the gateway. */
async function paidTraffic() {
  const client = new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  for (let i = 0; i < 3; i++)
    await client.chat.completions.create({ model: PAID, messages: [{ role: 'user', content: `hello ${i}` }] });
  for (let i = 0; i < 2; i++) {
    const stream = await client.chat.completions.create({
      model: PAID,
      messages: [{ role: 'user', content: `stream ${i}` }],
      stream: true,
    });
    for await (const _ of stream);
  }
  for (let i = 0; i < 2; i++)
    await expect(
      client.chat.completions.create({ model: DEAD, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toThrow();
  await gw.settled();
}

/** Settlements of 3 and 100 days ago in one batch (two of them in one group: summed before the upsert). */
async function earlierDays() {
  const s = (id: string, at: number, charge: number, status = 200): Settlement => ({
    requestId: `rollup-${process.pid}-${id}`,
    accountId,
    keyId,
    model: PAID,
    endpoint: 'chat',
    charge,
    uncovered: 0,
    status,
    provider: 'local',
    counted: 'upstream',
    usage: usage(100, 50, { cached: 10, reasoning: 5 }),
    latencyMs: 20,
    ttfbMs: 10,
    at,
    leaseId: null,
    checkpointed: false,
  });
  await writeSettlements(gw.app.db, [
    s('old-1', today - 100 * DAY + 1000, 300),
    s('old-2', today - 100 * DAY + 5000, 200, 502),
    s('recent', today - 3 * DAY + 7 * 3_600_000, 400),
  ]);
}

async function admin(method: string, url: string, body?: unknown) {
  const r = await fetch(`${gw.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: (await r.json()) as any };
}

const SUMS = ['prompt_tokens', 'cached_tokens', 'completion_tokens', 'reasoning_tokens', 'cost_micros'] as const;

/** The account's records summed per (day, key, model, provider), as the rollups should have them. */
async function recordSums(): Promise<Map<string, Record<string, number>>> {
  const out = new Map<string, Record<string, number>>();
  for (const r of await gw.app.db('usage_records').where('account_id', accountId)) {
    const day = Number(r.created_at) - (Number(r.created_at) % DAY);
    const k = `${day} ${r.key_id} ${r.model} ${r.provider ?? ''}`;
    const g = out.get(k) ?? { requests: 0, errors: 0, ...Object.fromEntries(SUMS.map((c) => [c, 0])) };
    g.requests++;
    if (Number(r.status) >= 400) g.errors++;
    for (const c of SUMS) g[c] += Number(r[c]);
    out.set(k, g);
  }
  return out;
}

async function rollupSums(): Promise<Map<string, Record<string, number>>> {
  const rows = await gw.app.db('usage_rollups').where('account_id', accountId);
  return new Map(
    rows.map((r) => [
      `${r.day} ${r.key_id} ${r.model} ${r.provider}`,
      Object.fromEntries(['requests', 'errors', ...SUMS].map((c) => [c, Number(r[c])])),
    ]),
  );
}

/** What the records say of a range, per model: what listUsage's totals were computed from before the rollups. */
async function totalsFromRecords(from?: number, to?: number) {
  const q = gw.app.db('usage_records').where('account_id', accountId);
  if (from !== undefined) q.andWhere('created_at', '>=', from);
  if (to !== undefined) q.andWhere('created_at', '<', to);
  const by = new Map<string, { requests: number; prompt_tokens: number; cost: number }>();
  for (const r of await q) {
    const t = by.get(r.model) ?? { requests: 0, prompt_tokens: 0, cost: 0 };
    t.requests++;
    t.prompt_tokens += Number(r.prompt_tokens);
    t.cost += Number(r.cost_micros);
    by.set(r.model, t);
  }
  return [...by.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
}

/** Every model's together. */
async function allFromRecords(from?: number) {
  const all = { requests: 0, prompt_tokens: 0, cost: 0 };
  for (const [, t] of await totalsFromRecords(from)) {
    all.requests += t.requests;
    all.prompt_tokens += t.prompt_tokens;
    all.cost += t.cost;
  }
  return all;
}

async function consoleTotals(query: string) {
  const r = await customer.get(`/console/api/usage?${query}`);
  expect(r.status).toBe(200);
  return (r.body.totals as { model: string; requests: number; prompt_tokens: number; cost_usd: string }[]).map((t) => [
    t.model,
    { requests: t.requests, prompt_tokens: t.prompt_tokens, cost: t.cost_usd },
  ]);
}

const asConsole = (rows: Awaited<ReturnType<typeof totalsFromRecords>>) =>
  rows.map(([m, t]) => [m, { requests: t.requests, prompt_tokens: t.prompt_tokens, cost: formatUsd(t.cost) }]);

test('the rollups are the sums of the usage records: chat, streams, upstream errors and earlier days', async () => {
  const records = await recordSums();
  expect(await rollupSums()).toEqual(records);
  const todays = [...records.entries()].filter(([k]) => k.startsWith(`${today} `));
  const requests = todays.reduce((n, [, g]) => n + g.requests, 0);
  const errors = todays.reduce((n, [, g]) => n + g.errors, 0);
  expect([requests, errors]).toEqual([7, 2]); // 3 chats, 2 streams, 2 upstream failures
  expect(records.get(`${today - 100 * DAY} ${keyId} ${PAID} local`)).toMatchObject({
    requests: 2,
    errors: 1,
    cost_micros: 500,
  });
});

test("the console's usage totals are the records' sums over whole days, parts of days and both", async () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  const ranges: [number | undefined, number | undefined][] = [
    [undefined, undefined],
    [today - 5 * DAY, undefined], // whole days
    [today - 3 * DAY + 3_600_000, undefined], // a part of a day, then whole days
    [today - 3 * DAY + 3_600_000, today - 3 * DAY + 8 * 3_600_000], // a part of one day
    [today - 200 * DAY + 1, today - 2 * DAY + 1], // parts at both ends, whole days between
    [today + 1, undefined], // today, after midnight
  ];
  for (const [from, to] of ranges) {
    const query = [from !== undefined && `from=${iso(from)}`, to !== undefined && `to=${iso(to)}`]
      .filter(Boolean)
      .join('&');
    expect([query, await consoleTotals(query)]).toEqual([query, asConsole(await totalsFromRecords(from, to))]);
  }
});

test('the daily usage, the account totals and the operator reports read the same sums', async () => {
  const daily = await customer.get('/console/api/usage/daily?days=7');
  expect(daily.status).toBe(200);
  const byDate = new Map(daily.body.data.map((d: any) => [d.date, d]));
  const threeAgo: any = byDate.get(new Date(today - 3 * DAY).toISOString().slice(0, 10));
  expect(threeAgo).toMatchObject({
    requests: 1,
    cost_usd: '0.000400',
    usage: { prompt: 100, cached: 10, completion: 50 },
  });
  const todays = await allFromRecords(today);
  expect(todays.requests).toBe(7);
  expect(byDate.get(new Date(today).toISOString().slice(0, 10))).toMatchObject({
    requests: todays.requests,
    cost_usd: formatUsd(todays.cost),
  });
  const account = await customer.get('/console/api/account');
  expect(account.body.totals.requests).toBe(10);
  const page = await admin('GET', `/admin/api/accounts/${accountId}`);
  expect(page.status).toBe(200);
  const day = await allFromRecords(Date.now() - DAY);
  expect(page.body.usage.day).toMatchObject({ requests: day.requests, spend_micros: day.cost });
  const month = await allFromRecords(Date.now() - 30 * DAY);
  expect(page.body.usage.month).toMatchObject({ requests: month.requests, spend_micros: month.cost });
  const overview = await admin('GET', '/admin/api/overview');
  expect(overview.body.by_model.find((m: any) => m.model === PAID)).toMatchObject({
    requests: month.requests - 2, // the upstream failures are the other model's
  });
  expect(month.requests).toBe(8);
});

test('retention deletes only the records past it; rollups, ledger, sums stay; a pruned receipt is a 404', async () => {
  const rollupsBefore = await rollupSums();
  const ledgerBefore = await gw.app.db('ledger').where('account_id', accountId).orderBy('id');
  const totalsBefore = await consoleTotals('');
  const oldId = `rollup-${process.pid}-old-1`;
  expect((await admin('GET', `/admin/api/usage/${oldId}`)).status).toBe(200);

  const pruned = await cli(['usage', 'prune', '--days', '90']);
  expect(pruned.deleted).toBeGreaterThanOrEqual(2);
  const left = await gw.app.db('usage_records').where('account_id', accountId).select('request_id', 'created_at');
  expect(left).toHaveLength(8);
  expect(left.every((r) => Number(r.created_at) >= Date.now() - 90 * DAY)).toBe(true);
  expect(await rollupSums()).toEqual(rollupsBefore);
  expect(await gw.app.db('ledger').where('account_id', accountId).orderBy('id')).toEqual(ledgerBefore);
  expect(await consoleTotals('')).toEqual(totalsBefore);
  expect((await customer.get('/console/api/account')).body.totals.requests).toBe(10);

  const receipt = await admin('GET', `/admin/api/usage/${oldId}`);
  expect(receipt.status).toBe(404);
  expect(receipt.body.error.message).toMatch(/kept 90 days: usage.retention_days/);
  expect((await admin('GET', `/admin/api/usage/rollup-${process.pid}-recent`)).status).toBe(200);
});

/** `switchyard ARGS` from the sources, on the test database; its printed JSON. */
function cli(args: string[]): Promise<any> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['-r', 'tsx/cjs', '-e', "require('./src/cli.ts').main(process.argv.slice(1))", '--', ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent' } },
      (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(JSON.parse(stdout))),
    ),
  );
}
