/** The in-memory refusal counts: a Map increment per refusal, bounded memory, and which errors count. */
import type { Knex } from 'knex';
import pino from 'pino';
import { RefusalCounts, refusalReason } from '../../src/billing/refusals';
import { budgetExhausted, insufficientQuota } from '../../src/billing/billing';
import { errors } from '../../src/errors';

const MINUTE = 60_000;
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE);
const refusal = (keyId: number) => ({ accountId: 1, keyId, status: 429, reason: 'account_balance', endpoint: 'x' });

/** A database that fails every query: the counts here must never touch it. */
const noDb = (() => {
  throw new Error('no query expected');
}) as unknown as Knex;

test('the same key, minute and reason is one count; memory holds at most max_buckets, the oldest dropped and told', () => {
  const counts = new RefusalCounts(noDb, { flush_ms: 1000, max_buckets: 3 }, pino({ level: 'silent' }));
  const dropped: number[] = [];
  counts.onDropped = (n) => dropped.push(n);
  for (let i = 0; i < 1000; i++) counts.record(refusal(1), T0 + (i % 50)); // one bucket: same minute
  expect(counts.size).toBe(1);
  counts.record(refusal(2), T0);
  counts.record(refusal(2), T0 + MINUTE); // the next minute is another bucket
  expect(counts.size).toBe(3);
  expect(dropped).toEqual([]);
  // A fourth and fifth: the oldest (key 1's, 1000 refusals) goes first, then key 2's first minute.
  counts.record(refusal(3), T0 + MINUTE);
  counts.record(refusal(4), T0 + MINUTE);
  expect(counts.size).toBe(3);
  expect(dropped).toEqual([1000, 1]);
});

test('what counts as a refusal of a known key, and under which reason', () => {
  expect(refusalReason(insufficientQuota())).toBe('account_balance');
  expect(refusalReason(insufficientQuota('key_quota'))).toBe('key_quota');
  expect(refusalReason(budgetExhausted({ micros: 1, period: 'day', resetsAt: T0 }))).toBe('key_budget');
  expect(refusalReason(errors.invalidApiKey('key_disabled'))).toBe('key_disabled');
  expect(refusalReason(errors.invalidApiKey('key_expired'))).toBe('key_expired');
  expect(refusalReason({ status: 429, code: 'rate_limit_exceeded' })).toBe('rate_limit');
  // A key that does not exist, a wrong scope, a bad body, an upstream failure: not refusals of a known key.
  expect(refusalReason(errors.invalidApiKey())).toBeNull();
  expect(refusalReason(errors.missingScope('chat'))).toBeNull();
  expect(refusalReason(errors.modelNotFound('x'))).toBeNull();
  expect(refusalReason({ status: 502, code: 'upstream_error' })).toBeNull();
});

test('a write that fails keeps the counts for the next one', async () => {
  const failing = (() => ({
    insert: () => ({ onConflict: () => ({ merge: () => Promise.reject(new Error('database away')) }) }),
  })) as unknown as Knex;
  Object.assign(failing, { client: { config: { client: 'sqlite3' } }, raw: () => 'raw' });
  const counts = new RefusalCounts(failing, { flush_ms: 1000, max_buckets: 10 }, pino({ level: 'silent' }));
  counts.record(refusal(1), T0);
  counts.record(refusal(1), T0);
  await counts.flush();
  expect(counts.size).toBe(1);
  counts.record(refusal(1), T0); // added to the count put back
  expect(counts.size).toBe(1);
});
