/**
 * `switchyard ledger verify`: every balance equals the sum of its ledger rows, every held amount equals the sum of
 * its open holds and credit leases, every key's spend equals its usage rows, and no hold or lease has outlived its
 * expiry (a stale one means no sweeper is running). It also lists every shortfall — what an upstream billed beyond
 * what an account could pay — which the books record but nobody was charged for.
 */
import type { Knex } from 'knex';

export interface LedgerProblem {
  account_id: number;
  problem: string;
  expected: number;
  actual: number;
}

export interface Verification {
  ok: boolean;
  accounts_checked: number;
  problems: LedgerProblem[];
  stale_holds: { request_id: string; account_id: number; expired_ms_ago: number }[];
  stale_leases: { id: string; account_id: number; expired_ms_ago: number }[];
  /** Per account: shortfall rows and the micro-USD not charged. */
  shortfalls: { account_id: number; requests: number; uncovered_micros: number }[];
}

type Sum = { id: unknown; total: unknown };

/** SUM(column) grouped by `by`, as a map of numbers. */
async function sumBy(q: Knex.QueryBuilder, by: string, column: string): Promise<Map<number, number>> {
  const rows = (await q.select({ id: by }).sum({ total: column }).groupBy(by)) as Sum[];
  return new Map(rows.map((r) => [Number(r.id), Number(r.total)]));
}

function add(a: Map<number, number>, b: Map<number, number>): Map<number, number> {
  for (const [k, v] of b) a.set(k, (a.get(k) ?? 0) + v);
  return a;
}

export async function verifyLedger(db: Knex, now = Date.now(), graceMs = 5_000): Promise<Verification> {
  const problems: LedgerProblem[] = [];
  const accounts = await accountProblems(db, problems);
  await keyProblems(db, problems);
  const stale = await staleHolds(db, now, graceMs);
  const staleLeases = await staleLeaseRows(db, now, graceMs);
  return {
    ok: problems.length === 0 && stale.length === 0 && staleLeases.length === 0,
    accounts_checked: accounts,
    problems,
    stale_holds: stale,
    stale_leases: staleLeases,
    shortfalls: await shortfallsByAccount(db),
  };
}

/** Each account's balance against its ledger, and its held amount against its holds and leases; how many were checked. */
async function accountProblems(db: Knex, problems: LedgerProblem[]): Promise<number> {
  const accounts = await db('accounts').select('id', 'balance_micros', 'held_micros');
  const sums = await sumBy(db('ledger'), 'account_id', 'amount_micros');
  const held = add(
    await sumBy(db('holds'), 'account_id', 'amount_micros'),
    await sumBy(db('leases'), 'account_id', 'amount_micros'),
  );
  for (const a of accounts) {
    const id = Number(a.id);
    const balance = Number(a.balance_micros);
    const differs = (problem: string, expected: number, actual: number) =>
      expected !== actual && problems.push({ account_id: id, problem, expected, actual });
    differs('balance differs from the sum of its ledger rows', sums.get(id) ?? 0, balance);
    differs('held amount differs from its open holds and leases', held.get(id) ?? 0, Number(a.held_micros));
    if (balance < 0) problems.push({ account_id: id, problem: 'negative balance', expected: 0, actual: balance });
  }
  return accounts.length;
}

/** Each key's spend against its usage rows, and its held amount against its holds and leases. */
async function keyProblems(db: Knex, problems: LedgerProblem[]): Promise<void> {
  const keys = await db('api_keys').select('id', 'account_id', 'used_micros', 'held_micros');
  const spent = new Map(
    [...(await sumBy(db('ledger').where('kind', 'usage'), 'key_id', 'amount_micros'))].map(([k, v]) => [k, -v]),
  );
  const keyHeld = add(
    await sumBy(db('holds'), 'key_id', 'amount_micros'),
    await sumBy(db('leases'), 'key_id', 'amount_micros'),
  );
  for (const k of keys) {
    const id = Number(k.id);
    const differs = (problem: string, expected: number, actual: number) =>
      expected !== actual && problems.push({ account_id: Number(k.account_id), problem, expected, actual });
    differs(`key ${id}: spend differs from its usage rows`, spent.get(id) ?? 0, Number(k.used_micros));
    differs(
      `key ${id}: held amount differs from its open holds and leases`,
      keyHeld.get(id) ?? 0,
      Number(k.held_micros),
    );
  }
}

/** Per-request holds that expired more than `graceMs` ago and were not swept. */
async function staleHolds(db: Knex, now: number, graceMs: number) {
  const rows = await db('holds')
    .whereNull('lease_id')
    .andWhere('expires_at', '<', now - graceMs)
    .select('request_id', 'account_id', 'expires_at');
  return rows.map((h) => ({
    request_id: String(h.request_id),
    account_id: Number(h.account_id),
    expired_ms_ago: now - Number(h.expires_at),
  }));
}

/** Leases that expired more than `graceMs` ago (their process died) and were not swept. */
async function staleLeaseRows(db: Knex, now: number, graceMs: number) {
  const rows = await db('leases')
    .where('expires_at', '<', now - graceMs)
    .select('id', 'account_id', 'expires_at');
  return rows.map((l) => ({
    id: String(l.id),
    account_id: Number(l.account_id),
    expired_ms_ago: now - Number(l.expires_at),
  }));
}

/** What upstreams billed beyond what accounts could pay, per account. */
async function shortfallsByAccount(db: Knex) {
  const rows = (await db('ledger')
    .where('kind', 'shortfall')
    .select({ account_id: 'account_id' })
    .count({ requests: '*' })
    .sum({ uncovered: 'uncovered_micros' })
    .groupBy('account_id')) as { account_id: unknown; requests: unknown; uncovered: unknown }[];
  return rows.map((r) => ({
    account_id: Number(r.account_id),
    requests: Number(r.requests),
    uncovered_micros: Number(r.uncovered),
  }));
}
