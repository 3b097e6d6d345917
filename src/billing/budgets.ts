/**
 * Key budgets: at most `budget_micros` per UTC calendar day, week (from Monday) or month. They live in the same
 * conditional updates as the quota: a reservation (a per-request hold, a lease or its growth) needs room in the
 * budget — what this period already spent plus what is held — so concurrent requests never overshoot it; a
 * settlement adds its charge to the period's spend, starting it afresh when the period changed. The period is
 * worked out in SQL from the key's own `budget_period`, so one statement serves every key.
 */
import type { Knex } from 'knex';
import { BUDGET_PERIODS, type BudgetPeriod } from '../accounts/keys';

/** When the period that contains `now` began (epoch ms, UTC). */
export function periodStart(period: BudgetPeriod, now: number): number {
  const d = new Date(now);
  if (period === 'month') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return period === 'day' ? day : day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
}

/** When the period that contains `now` ends (the budget starts afresh). */
export function periodEnd(period: BudgetPeriod, now: number): number {
  const start = new Date(periodStart(period, now));
  if (period === 'month') return Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
  return start.getTime() + (period === 'day' ? 1 : 7) * 86_400_000;
}

const starts = (now: number) => BUDGET_PERIODS.map((p) => periodStart(p, now));

/**
 * The start of the key's current period, in SQL (3 bindings: starts(now)). ELSE 0.0, not 0: PostgreSQL types a CASE
 * whose other branches are bindings after its one literal, and an integer 0 would make them INTEGER, too small for
 * epoch milliseconds ("out of range for type integer"); 0.0 makes them NUMERIC, exact, on every database.
 */
const PERIOD = "(CASE budget_period WHEN 'day' THEN ? WHEN 'week' THEN ? WHEN 'month' THEN ? ELSE 0.0 END)";

/** Room in the key's budget for `amount` more held (no budget: always). Bindings: roomBindings. */
export const BUDGET_ROOM_SQL = `(budget_micros IS NULL OR budget_micros - (CASE WHEN budget_start = ${PERIOD} THEN budget_used_micros ELSE 0 END) - held_micros >= ?)`;
export const roomBindings = (now: number, amount: number) => [...starts(now), amount];

/** SET clauses adding a charge to the period's spend (budget_used before budget_start: MySQL assigns left to right). */
export const BUDGET_SPEND_SQL = `budget_used_micros = CASE WHEN budget_start = ${PERIOD} THEN budget_used_micros + ? ELSE ? END, budget_start = ${PERIOD}`;
export const spendBindings = (now: number, charged: number) => [...starts(now), charged, charged, ...starts(now)];

/** What the key spent of its budget in the current period. */
export function spentThisPeriod(
  k: { budget_period: BudgetPeriod | null; budget_start: number; budget_used_micros: number },
  now: number,
): number {
  return k.budget_period && k.budget_start === periodStart(k.budget_period, now) ? k.budget_used_micros : 0;
}

/** What a key row (budget columns as selected) may still spend this period, held money not deducted; null: no budget. */
export function budgetLeftOf(r: Record<string, unknown>, now: number): number | null {
  if (r.budget_micros === null || r.budget_micros === undefined) return null;
  return (
    Number(r.budget_micros) -
    spentThisPeriod(
      {
        budget_period: r.budget_period as BudgetPeriod | null,
        budget_start: Number(r.budget_start),
        budget_used_micros: Number(r.budget_used_micros),
      },
      now,
    )
  );
}

/** The budget columns of api_keys, for budgetLeftOf. */
export const BUDGET_COLUMNS = ['budget_micros', 'budget_period', 'budget_start', 'budget_used_micros'] as const;

/** A key's spend grows by `charged` (its quota and its budget period's), and `released` of what it held goes back. */
export async function spendKey(
  trx: Knex.Transaction,
  keyId: number,
  charged: number,
  released: number,
  now: number,
): Promise<void> {
  await trx.raw(
    `UPDATE api_keys SET used_micros = used_micros + ?, held_micros = held_micros - ?, ${BUDGET_SPEND_SQL} WHERE id = ?`,
    [charged, released, ...spendBindings(now, charged), keyId],
  );
}

/**
 * When a budget is set or changed, its period starts from what the key really spent since the period began (its usage
 * records), not from nothing: a monthly budget of 10 USD set on the 20th of a month in which the key spent 50 allows
 * nothing more this month, and switching a budget from day to week counts the whole week. One statement, so a
 * settlement written meanwhile is counted once (in the records it is read from, or added after).
 */
export async function startBudgetPeriod(db: Knex, keyId: number, now = Date.now()): Promise<void> {
  const key = await db('api_keys').where('id', keyId).first('budget_period');
  if (!key?.budget_period) return;
  const start = periodStart(key.budget_period as BudgetPeriod, now);
  await db.raw(
    'UPDATE api_keys SET budget_used_micros = (SELECT COALESCE(SUM(cost_micros), 0) FROM usage_records WHERE key_id = ? AND created_at >= ?), budget_start = ? WHERE id = ?',
    [keyId, start, start, keyId],
  );
}
