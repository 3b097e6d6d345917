/**
 * The SQL of money in flight: per-request holds, credit leases, the batched write of settlements, and the
 * sweeping of what dead processes left. Every function is one transaction (or one statement) and keeps the books
 * balanced: an account's held_micros is the sum of its holds and leases, its balance the sum of its ledger rows.
 */
import type { BudgetPeriod } from '../accounts/keys';
import {
  BUDGET_COLUMNS,
  BUDGET_ROOM_SQL,
  budgetLeftOf,
  periodEnd,
  roomBindings,
  spendKey,
  spentThisPeriod,
} from './budgets';
import type { Knex } from 'knex';
import { transact } from '../db';
import { addRollups, rollupRows } from '../db/rollups';
import { withSettlementTx } from './settlementTx';
import { usage, usageColumns, type Usage } from '../usage';

export class NotCovered extends Error {}

/** One settled request, as it is written: its charge, its ledger rows and its usage record. */
export interface Settlement {
  requestId: string;
  accountId: number;
  keyId: number;
  model: string;
  endpoint: string;
  /** Charged (≤ what the account and key can pay); `uncovered`: what the upstream billed beyond it. */
  charge: number;
  uncovered: number;
  status: number;
  provider: string | null;
  counted: string;
  /** What it used, by usage class (its usage record stores every class, its ledger row the prompt and completion). */
  usage: Usage;
  latencyMs: number | null;
  ttfbMs: number | null;
  at: number;
  /** Under a lease: its id (the charge comes out of it); null for a per-request hold. */
  leaseId: string | null;
  /** A checkpoint row of it may exist (holds.request_id): it is deleted, and if it is gone the sweeper charged it. */
  checkpointed: boolean;
  /**
   * What was held for it and what that covered (the prompt bound, the output allowance), kept in its usage record for
   * its receipt; null or absent when nothing was held (a free model) or it is not known (settled by the sweeper).
   */
  held?: { micros: number; promptTokens: number; outputTokens: number } | null;
  /**
   * Its batch failed before: the commit may have gone through with its answer lost (the connection dropped during
   * COMMIT), so the next try first skips what is already written instead of failing on the unique request id forever.
   */
  retried?: boolean;
}

/**
 * Money a key can still reserve: the least of the account's and the key's available amounts. In a transaction,
 * `lock` reads both rows for update (the account's first, as every reservation does): what it returns stays true
 * until the transaction ends.
 */
export async function available(
  db: Knex | Knex.Transaction,
  accountId: number,
  keyId: number,
  now = Date.now(),
  lock = false,
): Promise<number> {
  const accountQuery = db('accounts').where({ id: accountId, status: 'active' });
  const account = await (lock ? accountQuery.forUpdate() : accountQuery).first('balance_micros', 'held_micros');
  const keyQuery = db('api_keys').where('id', keyId);
  const key = await (lock ? keyQuery.forUpdate() : keyQuery).first(
    'quota_micros',
    'used_micros',
    'held_micros',
    'budget_micros',
    'budget_period',
    'budget_start',
    'budget_used_micros',
  );
  if (!account || !key) return 0;
  let left = Number(account.balance_micros) - Number(account.held_micros);
  if (key.quota_micros !== null)
    left = Math.min(left, Number(key.quota_micros) - Number(key.used_micros) - Number(key.held_micros));
  if (key.budget_micros !== null) left = Math.min(left, budgetLeft(key, now));
  return Math.max(0, left);
}

/** What a key's budget has left this period (what it spent and what is held count), or null without a budget. */
function budgetLeft(key: Record<string, unknown>, now: number): number {
  const spent = spentThisPeriod(
    {
      budget_period: key.budget_period as BudgetPeriod,
      budget_start: Number(key.budget_start),
      budget_used_micros: Number(key.budget_used_micros),
    },
    now,
  );
  return Number(key.budget_micros) - spent - Number(key.held_micros);
}

/** Which limit stops a key: the account's balance, the key's lifetime quota, or its budget for the period. */
export type SpendCause =
  | { reason: 'account_balance' }
  | { reason: 'key_quota' }
  | { reason: 'key_budget'; micros: number; period: BudgetPeriod; resetsAt: number };

/**
 * Why a key cannot reserve more: whichever of the account's money, the key's quota and its budget (requests in
 * flight count: they hold their part) has the least left. A budget that ties is named (it says when it starts
 * afresh); a quota that ties with the balance is not (topping up is what the owner can do about it).
 */
export async function spendCause(db: Knex, accountId: number, keyId: number, now = Date.now()): Promise<SpendCause> {
  const key = await db('api_keys')
    .where('id', keyId)
    .first(
      'quota_micros',
      'used_micros',
      'held_micros',
      'budget_micros',
      'budget_period',
      'budget_start',
      'budget_used_micros',
    );
  const account = await db('accounts').where('id', accountId).first('balance_micros', 'held_micros');
  const money = account ? Number(account.balance_micros) - Number(account.held_micros) : 0;
  if (!key) return { reason: 'account_balance' };
  const quota =
    key.quota_micros === null ? Infinity : Number(key.quota_micros) - Number(key.used_micros) - Number(key.held_micros);
  if (key.budget_micros !== null && budgetLeft(key, now) <= Math.min(money, quota)) {
    const period = key.budget_period as BudgetPeriod;
    return { reason: 'key_budget', micros: Number(key.budget_micros), period, resetsAt: periodEnd(period, now) };
  }
  return quota < money ? { reason: 'key_quota' } : { reason: 'account_balance' };
}

/** Adds `amount` to the account's and the key's held money, if both can cover it; else throws NotCovered. */
async function reserve(trx: Knex.Transaction, accountId: number, keyId: number, amount: number): Promise<void> {
  const account = await trx('accounts')
    .where('id', accountId)
    .andWhere('status', 'active')
    .andWhereRaw('balance_micros - held_micros >= ?', [amount])
    .increment('held_micros', amount);
  if (account !== 1) throw new NotCovered();
  const key = await trx('api_keys')
    .where('id', keyId)
    .andWhere((q) => q.whereNull('quota_micros').orWhereRaw('quota_micros - used_micros - held_micros >= ?', [amount]))
    .andWhereRaw(BUDGET_ROOM_SQL, roomBindings(Date.now(), amount))
    .increment('held_micros', amount);
  if (key !== 1) throw new NotCovered();
}

const covered = async (work: () => Promise<void>): Promise<boolean> => {
  try {
    await work();
    return true;
  } catch (e) {
    if (e instanceof NotCovered) return false;
    throw e;
  }
};

export interface HoldRow {
  request_id: string;
  endpoint: string;
  account_id: number;
  key_id: number;
  model: string;
  amount_micros: number;
  progress_micros: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/** A per-request hold: the money reserved and the hold row, in one transaction; false when not covered. */
export function hold(db: Knex, h: HoldRow, expiresAt: number, now: number): Promise<boolean> {
  return covered(() =>
    transact(db, async (trx) => {
      await reserve(trx, h.account_id, h.key_id, h.amount_micros);
      await trx('holds').insert({ ...h, expires_at: expiresAt, created_at: now });
    }),
  );
}

/**
 * A new lease; returns its amount, 0 when none was opened (not covered). `amount` is a number, or the amount to
 * take of what the key can reserve, read under lock in the same transaction (0: none): processes that open leases
 * of one key at once each take their share of what the others left, not of what they all read before any of them
 * reserved (eight eighths of the same balance would be all of it, and every other request refused).
 */
export async function openLease(
  db: Knex,
  l: {
    id: string;
    accountId: number;
    keyId: number;
    owner: string;
    amount: number | ((available: number) => number);
    expiresAt: number;
    now: number;
  },
): Promise<number> {
  let amount = 0;
  const ok = await covered(() =>
    transact(db, async (trx) => {
      amount =
        typeof l.amount === 'number'
          ? l.amount
          : l.amount(await available(trx, l.accountId, l.keyId, Date.now(), true));
      if (amount <= 0) throw new NotCovered();
      await reserve(trx, l.accountId, l.keyId, amount);
      await trx('leases').insert({
        id: l.id,
        account_id: l.accountId,
        key_id: l.keyId,
        owner: l.owner,
        amount_micros: amount,
        expires_at: l.expiresAt,
        created_at: l.now,
      });
    }),
  );
  return ok ? amount : 0;
}

/** Adds `amount` to a lease; false when not covered, or when the lease is gone (swept). */
export function growLease(
  db: Knex,
  l: { id: string; accountId: number; keyId: number; amount: number; expiresAt: number },
): Promise<boolean> {
  return covered(() =>
    transact(db, async (trx) => {
      const n = await trx('leases')
        .where('id', l.id)
        .update({ amount_micros: trx.raw('amount_micros + ?', [l.amount]), expires_at: l.expiresAt });
      if (n !== 1) throw new NotCovered();
      await reserve(trx, l.accountId, l.keyId, l.amount);
    }),
  );
}

/**
 * Gives a lease's money back and deletes it; false when it was gone already. Its process closes it only when every
 * request under it is settled and written, so a checkpoint row still under it is stale — one whose write committed
 * while the connection dropped (its process never knew it was there, so its settlement did not take it): it goes too,
 * or it would outlive its lease for ever (no sweeper reads a checkpoint without its lease).
 */
export function closeLease(db: Knex, id: string): Promise<boolean> {
  return transact(db, async (trx) => {
    const lease = await trx('leases').where('id', id).forUpdate().first('account_id', 'key_id', 'amount_micros');
    if (!lease) return false;
    await trx('leases').where('id', id).del();
    await trx('holds').where('lease_id', id).del();
    const amount = Number(lease.amount_micros);
    await trx('accounts').where('id', lease.account_id).decrement('held_micros', amount);
    await trx('api_keys').where('id', lease.key_id).decrement('held_micros', amount);
    return true;
  });
}

/** Extends the leases' expiry; returns the ids of those that are gone. */
export async function renewLeases(db: Knex, ids: string[], expiresAt: number): Promise<string[]> {
  if (!ids.length) return [];
  const n = await db('leases').whereIn('id', ids).update({ expires_at: expiresAt });
  if (n === ids.length) return [];
  const alive = new Set((await db('leases').whereIn('id', ids).select('id')).map((r) => String(r.id)));
  return ids.filter((id) => !alive.has(id));
}

/** Records what requests in flight have certainly cost so far (per-request holds and lease checkpoints). */
export async function checkpoint(
  db: Knex,
  rows: (HoldRow & { lease_id: string | null; fresh: boolean })[],
  expiresAt: number,
  now: number,
): Promise<void> {
  if (!rows.length) return;
  await transact(db, async (trx) => {
    for (const { fresh, ...r } of rows) {
      const progress = {
        progress_micros: r.progress_micros,
        prompt_tokens: r.prompt_tokens,
        completion_tokens: r.completion_tokens,
        expires_at: expiresAt,
      };
      if (fresh) await trx('holds').insert({ ...r, ...progress, created_at: now });
      else await trx('holds').where('request_id', r.request_id).update(progress);
    }
  });
}

/**
 * Writes settled requests in one transaction (the batch's `charge` and `uncovered` are set to what was written):
 * each charge comes out of its lease (or its per-request hold),
 * the account's balance and the key's spend change once each, and the ledger rows and usage records go in as
 * batches. Returns the lease ids that turned out to be gone (their requests were charged directly, capped at what
 * the account could pay, or skipped if the sweeper had charged their checkpoint).
 */
export function writeSettlements(
  db: Knex,
  batch: Settlement[],
): Promise<{ goneLeases: string[]; written: Settlement[] }> {
  return withSettlementTx(db, async (tx) => {
    const leaseIds = [...new Set(batch.map((s) => s.leaseId).filter((x): x is string => !!x))];
    const alive = await tx.aliveLeases(leaseIds);
    const done = batch.some((s) => s.retried) ? await tx.recorded(batch.map((s) => s.requestId)) : NONE;
    const present = await tx.takeCheckpoints(batch.filter((s) => s.checkpointed).map((s) => s.requestId));
    const accounts = withTotals(await tx.accounts([...new Set(batch.map((s) => s.accountId))]));
    const keys = withTotals(await tx.keys([...new Set(batch.map((s) => s.keyId))]));
    const leases = new Map<string, number>();
    const ledger: Record<string, unknown>[] = [];
    const records: Record<string, unknown>[] = [];
    const written: Settlement[] = [];
    for (const s of batch) {
      if (done.has(s.requestId)) {
        written.push(s); // by an earlier try whose commit went through unanswered: charged then, not again
        continue;
      }
      const account = accounts.get(s.accountId);
      if (!account) continue; // the account was deleted
      const key = keys.get(s.keyId);
      if (s.leaseId && !alive.has(s.leaseId)) {
        if (s.checkpointed && !present.has(s.requestId)) continue; // the sweeper charged its checkpoint
        // The lease was swept while this process still used it: charge what the account can pay now.
        const capped = Math.max(0, Math.min(s.charge, payable(account, key)));
        s.uncovered += s.charge - capped;
        s.charge = capped;
      } else if (s.leaseId) {
        leases.set(s.leaseId, (leases.get(s.leaseId) ?? 0) + s.charge);
        account.released += s.charge;
        if (key) key.released += s.charge;
      }
      account.charged += s.charge;
      if (key) key.charged += s.charge;
      const balanceAfter = account.balance - account.charged;
      if (s.charge > 0) ledger.push(ledgerRow(s, 'usage', -s.charge, balanceAfter));
      if (s.uncovered > 0) ledger.push(ledgerRow(s, 'shortfall', 0, balanceAfter));
      records.push(usageRecord(s));
      written.push(s);
    }
    for (const [id, a] of accounts) if (a.charged || a.released) await tx.charge(id, a.charged, a.released);
    for (const [id, k] of keys) if (k.charged || k.released) await tx.spend(id, k.charged, k.released);
    for (const [id, amount] of leases) if (amount) await tx.shrinkLease(id, amount);
    if (ledger.length) await tx.insert('ledger', ledger);
    await tx.insert('usage_records', records);
    await tx.rollup(rollupRows(records));
    return { goneLeases: leaseIds.filter((id) => !alive.has(id)), written };
  });
}

const NONE: ReadonlySet<string> = new Set();

type Totals = { charged: number; released: number };

/** Rows read for a batch, each with what the batch charges it and releases of what it held. */
function withTotals<T>(rows: Map<number, T>): Map<number, T & Totals> {
  return new Map([...rows].map(([id, r]) => [id, { ...r, charged: 0, released: 0 }]));
}

/** What an account (and its key) can still pay in this batch: its balance, quota and budget, less what is held. */
function payable(
  account: { balance: number; held: number } & Totals,
  key: ({ quota: number | null; used: number; held: number; budgetLeft: number | null } & Totals) | undefined,
): number {
  let can = account.balance - account.charged - account.held + account.released;
  if (key && key.quota !== null) can = Math.min(can, key.quota - key.used - key.charged - key.held + key.released);
  if (key && key.budgetLeft !== null) can = Math.min(can, key.budgetLeft - key.charged - key.held + key.released);
  return can;
}

const SHORTFALL_NOTE = 'the upstream billed more than the account could pay';

function ledgerRow(
  s: Settlement,
  kind: 'usage' | 'shortfall',
  amount: number,
  balanceAfter: number,
): Record<string, unknown> {
  return {
    account_id: s.accountId,
    kind,
    amount_micros: amount,
    balance_after: balanceAfter,
    ref: s.requestId,
    key_id: s.keyId,
    model: s.model,
    prompt_tokens: s.usage.prompt,
    completion_tokens: s.usage.completion,
    note: kind === 'shortfall' ? SHORTFALL_NOTE : null,
    uncovered_micros: kind === 'shortfall' ? s.uncovered : null,
    created_at: s.at,
  };
}

function usageRecord(s: Settlement): Record<string, unknown> {
  // built field by field, not with the usage columns spread in: on Node 20 each field after a spread costs ~1 µs
  const r: Record<string, unknown> = {
    request_id: s.requestId,
    account_id: s.accountId,
    key_id: s.keyId,
    model: s.model,
    provider: s.provider,
    endpoint: s.endpoint,
    status: s.status,
  };
  usageColumns(s.usage, r);
  r.counted = s.counted;
  r.cost_micros = s.charge;
  r.latency_ms = s.latencyMs;
  r.ttfb_ms = s.ttfbMs;
  r.created_at = s.at;
  r.held_micros = s.held?.micros ?? null;
  r.held_prompt_tokens = s.held?.promptTokens ?? null;
  r.held_output_tokens = s.held?.outputTokens ?? null;
  return r;
}

/**
 * Settles a per-request hold: deletes it (whoever deletes it settles it, so nothing is charged twice), charges
 * `cost` — never more than the account and the key can pay; the rest is a shortfall — and writes the ledger rows
 * and the usage record. Returns the charge, or null when somebody else settled the hold first.
 */
export function settleHold(
  db: Knex,
  h: HoldRow,
  s: Omit<Settlement, 'charge' | 'uncovered' | 'leaseId' | 'checkpointed'> & { cost: number },
): Promise<number | null> {
  return transact(db, async (trx) => {
    const gone = await trx('holds').where('request_id', h.request_id).del();
    if (gone !== 1) return null;
    const amount = Number(h.amount_micros);
    if (await trx('usage_records').where('request_id', h.request_id).first('id')) {
      // Already settled (its usage record is written): a hold row left behind only gives its money back.
      await trx('accounts').where('id', h.account_id).decrement('held_micros', amount);
      await trx('api_keys').where('id', h.key_id).decrement('held_micros', amount);
      return null;
    }
    const account = await trx('accounts').where('id', h.account_id).forUpdate().first('balance_micros', 'held_micros');
    // The key may have been deleted while the request ran (console): the account still pays, no quota applies.
    const key = await trx('api_keys')
      .where('id', h.key_id)
      .forUpdate()
      .first('quota_micros', 'used_micros', 'held_micros', ...BUDGET_COLUMNS);
    const balance = Number(account.balance_micros);
    let charge = Math.min(s.cost, Math.max(0, balance - (Number(account.held_micros) - amount)));
    const othersHold = key ? Number(key.held_micros) - amount : 0;
    if (key && key.quota_micros !== null)
      charge = Math.min(charge, Math.max(0, Number(key.quota_micros) - Number(key.used_micros) - othersHold));
    const budgetLeft = key ? budgetLeftOf(key, s.at) : null;
    if (budgetLeft !== null) charge = Math.min(charge, Math.max(0, budgetLeft - othersHold)); // beyond its hold, only what the budget has free
    await trx('accounts')
      .where('id', h.account_id)
      .update({
        held_micros: trx.raw('held_micros - ?', [amount]),
        balance_micros: trx.raw('balance_micros - ?', [charge]),
      });
    if (key) await spendKey(trx, h.key_id, charge, amount, s.at);
    const row = {
      account_id: h.account_id,
      ref: h.request_id,
      key_id: h.key_id,
      model: h.model,
      prompt_tokens: s.usage.prompt,
      completion_tokens: s.usage.completion,
      created_at: s.at,
    };
    if (charge > 0)
      await trx('ledger').insert({ ...row, kind: 'usage', amount_micros: -charge, balance_after: balance - charge });
    if (s.cost > charge) {
      await trx('ledger').insert({
        ...row,
        kind: 'shortfall',
        amount_micros: 0,
        balance_after: balance - charge,
        note: SHORTFALL_NOTE,
        uncovered_micros: s.cost - charge,
      });
    }
    await insertRecord(trx, usageRecord({ ...s, charge, uncovered: 0, leaseId: null, checkpointed: false }));
    return charge;
  });
}

/** Per-request holds whose lease expired (their process died), oldest first. */
export async function expiredHolds(db: Knex, now: number): Promise<(HoldRow & { created_at: number })[]> {
  return db('holds').whereNull('lease_id').andWhere('expires_at', '<', now).orderBy('id').limit(500);
}

/** Leases that expired (their process died). */
export async function expiredLeases(db: Knex, now: number): Promise<string[]> {
  return (await db('leases').where('expires_at', '<', now).orderBy('created_at').limit(100).select('id')).map((r) =>
    String(r.id),
  );
}

/** A request in flight under a swept lease, charged at its checkpoint: its ledger row and its usage record. */
async function chargeCheckpoint(
  trx: Knex.Transaction,
  lease: { id: string; accountId: number; keyId: number },
  r: HoldRow,
  c: { charge: number; balance: number; now: number },
): Promise<void> {
  const prompt = c.charge > 0 ? Number(r.prompt_tokens) : 0;
  if (c.charge > 0) {
    await trx('ledger').insert({
      account_id: lease.accountId,
      kind: 'usage',
      amount_micros: -c.charge,
      balance_after: c.balance,
      ref: r.request_id,
      key_id: lease.keyId,
      model: r.model,
      prompt_tokens: prompt,
      completion_tokens: Number(r.completion_tokens),
      created_at: c.now,
    });
  }
  const record = usageRecord({
    requestId: r.request_id,
    accountId: lease.accountId,
    keyId: lease.keyId,
    model: r.model,
    endpoint: r.endpoint,
    charge: c.charge,
    uncovered: 0,
    status: 500,
    provider: null,
    counted: 'checkpoint',
    usage: usage(prompt, Number(r.completion_tokens)),
    latencyMs: null,
    ttfbMs: null,
    at: c.now,
    leaseId: lease.id,
    checkpointed: true,
  });
  await insertRecord(trx, record);
}

/** One usage record, added to its day's rollup in the same transaction. */
async function insertRecord(trx: Knex.Transaction, record: Record<string, unknown>): Promise<void> {
  await trx('usage_records').insert(record);
  await addRollups(trx, rollupRows([record]));
}

/**
 * The checkpoints whose request has no usage record yet. One that has was settled by its process, which then lost
 * its connection before it knew (a commit whose answer never came: it kept the checkpoint, not knowing it was
 * written); charging it again would break the ledger's once-per-request rule, and fail on it for every sweep after.
 */
async function notSettled<R extends HoldRow>(trx: Knex.Transaction, rows: R[]): Promise<R[]> {
  if (!rows.length) return rows;
  const ids = rows.map((r) => r.request_id);
  const done = new Set(
    (await trx('usage_records').whereIn('request_id', ids).select('request_id')).map((r) => String(r.request_id)),
  );
  return rows.filter((r) => !done.has(r.request_id));
}

/**
 * Settles an expired lease: each checkpoint of a request in flight under it is charged at its recorded progress
 * (never more than the lease holds), and the rest of the lease goes back. Returns the requests charged; none
 * when another process swept it first.
 */
export function sweepLease(db: Knex, id: string, now: number): Promise<number> {
  return transact(db, async (trx) => {
    const lease = await trx('leases')
      .where('id', id)
      .andWhere('expires_at', '<', now)
      .forUpdate()
      .first('account_id', 'key_id', 'amount_micros');
    if (!lease) return 0;
    await trx('leases').where('id', id).del();
    const rows = (await trx('holds').where('lease_id', id).forUpdate().select()) as (HoldRow & {
      created_at: number;
    })[];
    if (rows.length) await trx('holds').where('lease_id', id).del();
    const account = await trx('accounts').where('id', lease.account_id).forUpdate().first('balance_micros');
    let left = Number(lease.amount_micros);
    let balance = Number(account.balance_micros);
    let total = 0;
    for (const r of await notSettled(trx, rows)) {
      const charge = Math.min(Number(r.progress_micros), left);
      left -= charge;
      total += charge;
      balance -= charge;
      const at = { id, accountId: Number(lease.account_id), keyId: Number(lease.key_id) };
      await chargeCheckpoint(trx, at, r, { charge, balance, now });
    }
    const amount = Number(lease.amount_micros);
    await trx('accounts')
      .where('id', lease.account_id)
      .update({
        balance_micros: trx.raw('balance_micros - ?', [total]),
        held_micros: trx.raw('held_micros - ?', [amount]),
      });
    await spendKey(trx, Number(lease.key_id), total, amount, now);
    return rows.length;
  });
}
