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
import { checkpoint, openLease, sweepLease, writeSettlements } from '../../src/billing/store';
import { connect } from '../../src/db';
import { usage } from '../../src/usage';

const db = connect(process.env.DATABASE_URL);
afterAll(() => db.destroy());

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
  await writeSettlements(db, [
    {
      requestId,
      ...ids,
      model: 'm',
      endpoint: 'chat',
      charge: 400,
      uncovered: 0,
      status: 200,
      provider: 'up',
      counted: 'upstream',
      usage: usage(10, 8),
      latencyMs: 10,
      ttfbMs: 5,
      at: now,
      leaseId: lease,
      checkpointed: false,
    },
  ]);
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
