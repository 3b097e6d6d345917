/**
 * `switchyard ledger verify`: every balance equals the sum of its ledger rows, every held amount equals the sum of
 * its open holds, every key's spend equals its usage rows, and no hold has outlived its lease (a stale hold means
 * no sweeper is running).
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
}

type Sum = { id: unknown; total: unknown };

/** SUM(column) grouped by `by`, as a map of numbers. */
async function sumBy(q: Knex.QueryBuilder, by: string, column: string): Promise<Map<number, number>> {
  const rows = (await q.select({ id: by }).sum({ total: column }).groupBy(by)) as Sum[];
  return new Map(rows.map((r) => [Number(r.id), Number(r.total)]));
}

export async function verifyLedger(db: Knex, now = Date.now(), graceMs = 5_000): Promise<Verification> {
  const accounts = await db('accounts').select('id', 'balance_micros', 'held_micros');
  const sums = await sumBy(db('ledger'), 'account_id', 'amount_micros');
  const held = await sumBy(db('holds'), 'account_id', 'amount_micros');
  const problems: LedgerProblem[] = [];
  for (const a of accounts) {
    const id = Number(a.id);
    const ledger = sums.get(id) ?? 0;
    if (ledger !== Number(a.balance_micros)) problems.push({ account_id: id, problem: 'balance differs from the sum of its ledger rows', expected: ledger, actual: Number(a.balance_micros) });
    const holds = held.get(id) ?? 0;
    if (holds !== Number(a.held_micros)) problems.push({ account_id: id, problem: 'held amount differs from its open holds', expected: holds, actual: Number(a.held_micros) });
    if (Number(a.balance_micros) < 0) problems.push({ account_id: id, problem: 'negative balance', expected: 0, actual: Number(a.balance_micros) });
  }
  const keys = await db('api_keys').select('id', 'account_id', 'used_micros', 'held_micros');
  const spent = new Map([...(await sumBy(db('ledger').where('kind', 'usage'), 'key_id', 'amount_micros'))].map(([k, v]) => [k, -v]));
  const keyHeld = await sumBy(db('holds'), 'key_id', 'amount_micros');
  for (const k of keys) {
    const id = Number(k.id);
    if ((spent.get(id) ?? 0) !== Number(k.used_micros)) problems.push({ account_id: Number(k.account_id), problem: `key ${id}: spend differs from its usage rows`, expected: spent.get(id) ?? 0, actual: Number(k.used_micros) });
    if ((keyHeld.get(id) ?? 0) !== Number(k.held_micros)) problems.push({ account_id: Number(k.account_id), problem: `key ${id}: held amount differs from its open holds`, expected: keyHeld.get(id) ?? 0, actual: Number(k.held_micros) });
  }
  const stale = (await db('holds').where('expires_at', '<', now - graceMs).select('request_id', 'account_id', 'expires_at')).map((h) => ({
    request_id: String(h.request_id),
    account_id: Number(h.account_id),
    expired_ms_ago: now - Number(h.expires_at),
  }));
  return { ok: problems.length === 0 && stale.length === 0, accounts_checked: accounts.length, problems, stale_holds: stale };
}
