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
  const accounts = await db('accounts').select('id', 'balance_micros', 'held_micros');
  const sums = await sumBy(db('ledger'), 'account_id', 'amount_micros');
  const held = add(await sumBy(db('holds'), 'account_id', 'amount_micros'), await sumBy(db('leases'), 'account_id', 'amount_micros'));
  const problems: LedgerProblem[] = [];
  for (const a of accounts) {
    const id = Number(a.id);
    const ledger = sums.get(id) ?? 0;
    if (ledger !== Number(a.balance_micros)) problems.push({ account_id: id, problem: 'balance differs from the sum of its ledger rows', expected: ledger, actual: Number(a.balance_micros) });
    const holds = held.get(id) ?? 0;
    if (holds !== Number(a.held_micros)) problems.push({ account_id: id, problem: 'held amount differs from its open holds and leases', expected: holds, actual: Number(a.held_micros) });
    if (Number(a.balance_micros) < 0) problems.push({ account_id: id, problem: 'negative balance', expected: 0, actual: Number(a.balance_micros) });
  }
  const keys = await db('api_keys').select('id', 'account_id', 'used_micros', 'held_micros');
  const spent = new Map([...(await sumBy(db('ledger').where('kind', 'usage'), 'key_id', 'amount_micros'))].map(([k, v]) => [k, -v]));
  const keyHeld = add(await sumBy(db('holds'), 'key_id', 'amount_micros'), await sumBy(db('leases'), 'key_id', 'amount_micros'));
  for (const k of keys) {
    const id = Number(k.id);
    if ((spent.get(id) ?? 0) !== Number(k.used_micros)) problems.push({ account_id: Number(k.account_id), problem: `key ${id}: spend differs from its usage rows`, expected: spent.get(id) ?? 0, actual: Number(k.used_micros) });
    if ((keyHeld.get(id) ?? 0) !== Number(k.held_micros)) problems.push({ account_id: Number(k.account_id), problem: `key ${id}: held amount differs from its open holds and leases`, expected: keyHeld.get(id) ?? 0, actual: Number(k.held_micros) });
  }
  const stale = (await db('holds').whereNull('lease_id').andWhere('expires_at', '<', now - graceMs).select('request_id', 'account_id', 'expires_at')).map((h) => ({
    request_id: String(h.request_id),
    account_id: Number(h.account_id),
    expired_ms_ago: now - Number(h.expires_at),
  }));
  const staleLeases = (await db('leases').where('expires_at', '<', now - graceMs).select('id', 'account_id', 'expires_at')).map((l) => ({
    id: String(l.id),
    account_id: Number(l.account_id),
    expired_ms_ago: now - Number(l.expires_at),
  }));
  const shortfalls = (
    (await db('ledger').where('kind', 'shortfall').select({ account_id: 'account_id' }).count({ requests: '*' }).sum({ uncovered: 'uncovered_micros' }).groupBy('account_id')) as {
      account_id: unknown;
      requests: unknown;
      uncovered: unknown;
    }[]
  ).map((r) => ({ account_id: Number(r.account_id), requests: Number(r.requests), uncovered_micros: Number(r.uncovered) }));
  return {
    ok: problems.length === 0 && stale.length === 0 && staleLeases.length === 0,
    accounts_checked: accounts.length,
    problems,
    stale_holds: stale,
    stale_leases: staleLeases,
    shortfalls,
  };
}
