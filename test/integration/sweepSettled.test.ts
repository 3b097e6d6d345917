/**
 * A lease's checkpoint whose request was settled already (found by the cluster test, test/cluster): the database
 * dropped the connection as a checkpoint's transaction committed, so its process never knew the checkpoint row was
 * written and settled the request without taking it; then the process died. The sweeper must settle the lease
 * without charging that request a second time — it used to fail on the ledger's unique (ref, kind) on every sweep,
 * and the lease stayed, stale, for ever. Runs on DATABASE_URL (SQLite, MariaDB, PostgreSQL).
 */
import crypto from 'node:crypto';
import { createAccount } from '../../src/accounts/accounts';
import { createKey } from '../../src/accounts/keys';
import { verifyLedger } from '../../src/billing/verify';
import {
  checkpoint,
  closeLease,
  openLease,
  sweepLease,
  writeSettlements,
  type Settlement,
} from '../../src/billing/store';
import { connect } from '../../src/db';
import { usage } from '../../src/usage';

const db = connect(process.env.DATABASE_URL);
afterAll(() => db.destroy());

/** A settled chat request of this key under this lease, as the paid path queues it. */
function settled(
  requestId: string,
  ids: { accountId: number; keyId: number },
  lease: string,
  charge: number,
  at: number,
): Settlement {
  const meta = { model: 'm', endpoint: 'chat', status: 200, provider: 'up', counted: 'upstream' };
  const timing = { latencyMs: 10, ttfbMs: 5, at };
  return {
    requestId,
    ...ids,
    ...meta,
    ...timing,
    charge,
    uncovered: 0,
    usage: usage(10, 8),
    leaseId: lease,
    checkpointed: false,
  };
}

test('an expired lease whose checkpoint was settled already is swept without a second charge', async () => {
  const now = Date.now();
  const account = await createAccount(db, `sweep-${crypto.randomUUID()}@example.com`, 1_000_000);
  const { key } = await createKey(db, { accountId: account.id });
  const lease = `lease_${crypto.randomUUID().replace(/-/g, '')}`;
  const requestId = `req_${crypto.randomUUID().replace(/-/g, '')}`;
  const ids = { accountId: account.id, keyId: key.id };
  expect(await openLease(db, { id: lease, ...ids, owner: 'test:1', amount: 10_000, expiresAt: now + 3000, now })).toBe(
    10_000,
  );
  const row = { request_id: requestId, endpoint: 'chat', account_id: account.id, key_id: key.id, model: 'm' };
  const progress = { amount_micros: 0, progress_micros: 300, prompt_tokens: 10, completion_tokens: 5 };
  await checkpoint(db, [{ ...row, ...progress, lease_id: lease, fresh: true }], now + 3000, now);
  // settled by a process that did not know its checkpoint had been written
  await writeSettlements(db, [settled(requestId, ids, lease, 400, now)]);
  expect(await db('holds').where('request_id', requestId)).toHaveLength(1);

  await sweepLease(db, lease, now + 60_000); // its process died: the lease expired
  expect(await db('leases').where('id', lease)).toHaveLength(0);
  expect(await db('holds').where('request_id', requestId)).toHaveLength(0);
  const debits = await db('ledger').where({ ref: requestId, kind: 'usage' });
  expect(debits.map((d) => Number(d.amount_micros))).toEqual([-400]);
  const a = await db('accounts').where('id', account.id).first();
  expect([Number(a.balance_micros), Number(a.held_micros)]).toEqual([1_000_000 - 400, 0]);
  const check = await verifyLedger(db, now + 60_000);
  expect(check.problems.filter((p) => p.account_id === account.id)).toEqual([]);
});

/**
 * A settlement batch whose COMMIT went through while the connection dropped before its answer (found by the cluster
 * test's database outage): the process saw an error and tried the batch again. It must skip what the first try wrote
 * — it used to fail on the usage records' unique request id on every try, and the process's queue stopped for good.
 */
test('a settlement batch tried again after a commit whose answer was lost is charged once, and the queue goes on', async () => {
  const now = Date.now();
  const account = await createAccount(db, `retry-${crypto.randomUUID()}@example.com`, 1_000_000);
  const { key } = await createKey(db, { accountId: account.id });
  const lease = `lease_${crypto.randomUUID().replace(/-/g, '')}`;
  const ids = { accountId: account.id, keyId: key.id };
  await openLease(db, { id: lease, ...ids, owner: 'test:1', amount: 10_000, expiresAt: now + 60_000, now });
  const settlement = (requestId: string, charge: number) => settled(requestId, ids, lease, charge, now);
  const first = settlement(`req_${crypto.randomUUID().replace(/-/g, '')}`, 400);
  await writeSettlements(db, [first]); // committed; its process never heard so
  // Without knowing it was tried, the same batch fails on the unique request id (what kept the queue stuck)...
  await expect(writeSettlements(db, [{ ...first }])).rejects.toHaveProperty(
    'message',
    expect.stringMatching(/unique|duplicate/i),
  );
  // ...marked as tried again, it is skipped, and a settlement queued behind it is written.
  const second = settlement(`req_${crypto.randomUUID().replace(/-/g, '')}`, 250);
  const { written } = await writeSettlements(db, [
    { ...first, retried: true },
    { ...second, retried: true },
  ]);
  expect(written.map((w) => w.requestId)).toEqual([first.requestId, second.requestId]);
  const debits = await db('ledger').whereIn('ref', [first.requestId, second.requestId]).andWhere('kind', 'usage');
  expect(debits.map((d) => Number(d.amount_micros)).sort()).toEqual([-400, -250].sort());
  expect(await db('usage_records').whereIn('request_id', [first.requestId, second.requestId])).toHaveLength(2);
  const a = await db('accounts').where('id', account.id).first();
  expect(Number(a.balance_micros)).toBe(1_000_000 - 650);
  const l = await db('leases').where('id', lease).first();
  expect(Number(l.amount_micros)).toBe(10_000 - 650);
  const rollup = await db('usage_rollups').where('account_id', account.id);
  expect(rollup.reduce((n, r) => n + Number(r.requests), 0)).toBe(2);
});

test('a lease closed by its process takes a stale checkpoint of a settled request with it', async () => {
  const now = Date.now();
  const account = await createAccount(db, `close-${crypto.randomUUID()}@example.com`, 1_000_000);
  const { key } = await createKey(db, { accountId: account.id });
  const lease = `lease_${crypto.randomUUID().replace(/-/g, '')}`;
  const requestId = `req_${crypto.randomUUID().replace(/-/g, '')}`;
  const ids = { accountId: account.id, keyId: key.id };
  await openLease(db, { id: lease, ...ids, owner: 'test:1', amount: 10_000, expiresAt: now + 60_000, now });
  const row = { request_id: requestId, endpoint: 'chat', account_id: account.id, key_id: key.id, model: 'm' };
  const progress = { amount_micros: 0, progress_micros: 300, prompt_tokens: 10, completion_tokens: 5 };
  // the checkpoint's commit went through unanswered: its process settles the request without taking it
  await checkpoint(db, [{ ...row, ...progress, lease_id: lease, fresh: true }], now + 60_000, now);
  await writeSettlements(db, [settled(requestId, ids, lease, 400, now)]);
  expect(await closeLease(db, lease)).toBe(true); // idle: every request under it written
  expect(await db('holds').where('request_id', requestId)).toHaveLength(0);
  const a = await db('accounts').where('id', account.id).first();
  expect([Number(a.balance_micros), Number(a.held_micros)]).toEqual([1_000_000 - 400, 0]);
  const check = await verifyLedger(db, now + 120_000);
  expect(check.problems.filter((p) => p.account_id === account.id)).toEqual([]);
  expect(check.stale_holds.filter((h) => h.request_id === requestId)).toEqual([]);
});
