/** How console and admin answers present accounts, keys and amounts; cookies; query helpers (ranges, cursors). */
import type { Knex } from 'knex';
import type { components } from '../../generated/openapi';
import { accountTotals, type Account } from '../accounts/accounts';
import type { ApiKey, BudgetPeriod } from '../accounts/keys';
import type { Operator, OperatorSession } from '../accounts/operators';
import { periodEnd, spentThisPeriod } from '../billing/budgets';
import { formatUsd, parseUsd } from '../money';
import { errors } from '../errors';
import { USAGE_CLASSES } from '../usage';
import type { UsageCounts } from '../db/queries/usage';

type Schemas = components['schemas'];

/** The usage columns that are also fields of their own in the console API (usage.ts, `apiField`). */
type FieldColumn = Extract<(typeof USAGE_CLASSES)[number], { apiField: true }>['column'];

/**
 * A usage record's or a total's counts as the console API shows them: every class in the `usage` map, by name, and
 * the classes older clients read also as fields of their own.
 */
export function usageCountsView(r: UsageCounts): Pick<Schemas['UsageRecord'], FieldColumn | 'usage'> {
  const fields: Partial<Record<FieldColumn, number>> = {};
  const usage: Schemas['UsageCounts'] = {};
  for (const c of USAGE_CLASSES) {
    usage[c.name] = r[c.column];
    if ('apiField' in c && c.apiField) fields[c.column] = r[c.column];
  }
  return { ...(fields as Record<FieldColumn, number>), usage };
}

/** The usage classes as the console API describes them, wholes before their parts. */
export const USAGE_CLASS_VIEWS: Schemas['UsageClass'][] = USAGE_CLASSES.map((c) => ({
  name: c.name,
  label: c.label,
  unit: c.unit,
  part_of: c.partOf,
}));

export const SESSION_COOKIE = 'sy_session';

const iso = (ms: number) => new Date(ms).toISOString();

/** `origin`: where the console is reached (for the referral link). */
export async function accountView(db: Knex, a: Account, origin: string): Promise<Schemas['ConsoleAccount']> {
  const t = await accountTotals(db, a.id);
  return {
    id: a.id,
    email: a.email,
    balance_usd: formatUsd(a.balance_micros),
    balance_micros: a.balance_micros,
    referral_code: a.referral_code,
    referral_link: `${origin}/console/register?ref=${encodeURIComponent(a.referral_code)}`,
    email_verified: a.verified_at !== null,
    low_balance_usd: a.low_balance_micros === null ? null : formatUsd(a.low_balance_micros),
    created_at: iso(a.created_at),
    totals: {
      spent_usd: formatUsd(t.spent_micros),
      requests: t.requests,
      topped_up_usd: formatUsd(t.topped_up_micros),
      referral_usd: formatUsd(t.referral_micros),
      credited_usd: formatUsd(t.credited_micros),
    },
  };
}

export function adminAccountView(a: Account): Schemas['AdminAccount'] {
  return {
    id: a.id,
    email: a.email,
    status: a.status,
    balance_usd: formatUsd(a.balance_micros),
    balance_micros: a.balance_micros,
    referral_code: a.referral_code,
    debt_usd: formatUsd(a.debt_micros),
    created_at: iso(a.created_at),
  };
}

export function keyView(k: ApiKey): Schemas['ConsoleKey'] {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    enabled: k.enabled,
    quota_usd: k.quota_micros === null ? null : formatUsd(k.quota_micros),
    used_usd: formatUsd(k.used_micros),
    models: k.models,
    scopes: k.scopes,
    created_at: iso(k.created_at),
    last_used_at: k.last_used_at === null ? null : iso(k.last_used_at),
    expires_at: k.expires_at === null ? null : iso(k.expires_at),
    budget: budgetView(k),
  };
}

/** A USD amount from a request (`"12.5"` or 12.5) in micro-USD, or a 400 naming `param`. */
export function usdParam(value: string | number, param: string, opts: { allowNegative?: boolean } = {}): number {
  let micros: number;
  try {
    micros = parseUsd(typeof value === 'number' ? numberText(value) : value);
  } catch {
    throw errors.invalidRequest(`Invalid value for '${param}': must be a USD amount with at most 6 decimals`, param);
  }
  if (micros < 0 && !opts.allowNegative)
    throw errors.invalidRequest(`Invalid value for '${param}': must not be negative`, param);
  return micros;
}

/** 12.5 → "12.5", 1e-7 → "0.0000001" (then refused for its 7 decimals), without exponent notation. */
function numberText(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const s = String(n);
  return /e/i.test(s) ? n.toFixed(20).replace(/\.?0+$/, '') : s;
}

export function sessionCookie(id: string, ttlMs: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Max-Age=${Math.floor(ttlMs / 1000)}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/**
 * Operators' sessions: a cookie of their own, sent only to /admin (never to the console's pages or API), SameSite
 * Strict (an operator follows no links into the admin API), and shorter-lived than a customer's: 12 hours.
 */
export const OPERATOR_COOKIE = 'sy_admin';
export const OPERATOR_SESSION_MS = 12 * 3_600_000;

export function operatorCookie(id: string, secure: boolean): string {
  return `${OPERATOR_COOKIE}=${id}; Max-Age=${OPERATOR_SESSION_MS / 1000}; Path=/admin; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

export function clearOperatorCookie(secure: boolean): string {
  return `${OPERATOR_COOKIE}=; Max-Age=0; Path=/admin; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** An operator as the admin API shows it: never its password hash or TOTP secret. */
export function operatorView(o: Operator): Schemas['Operator'] {
  return {
    id: o.id,
    email: o.email,
    role: o.role,
    totp_enabled: o.totpEnabled,
    disabled: o.disabled,
    created_at: iso(o.createdAt),
  };
}

export function operatorSessionView(
  operator: Operator,
  s: Pick<OperatorSession, 'csrfToken' | 'secondFactor'>,
): Schemas['OperatorSession'] {
  return { operator: operatorView(operator), second_factor: s.secondFactor, csrf_token: s.csrfToken };
}

export function clearSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** The value of one cookie from a Cookie header (the first one of that name). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** `from` / `to` query values (ISO dates or date-times) as epoch ms, or a 400 naming the parameter. */
export function timeParam(value: string | undefined, param: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const m = /^(\d{4}-\d\d-\d\d)(?:[T ]([\d:.]+)(Z|[+-]\d\d:?\d\d)?)?$/i.exec(value.trim());
  // A date alone, or a time without a zone, is UTC.
  const ms = m ? Date.parse(m[2] ? `${m[1]}T${m[2]}${m[3] ?? 'Z'}` : m[1]) : NaN;
  if (Number.isNaN(ms))
    throw errors.invalidRequest(`Invalid value for '${param}': must be an ISO 8601 date or date-time`, param);
  return ms;
}

/** The cursor of a page (the last row's id as text) back to an id, or a 400. */
export function cursorParam(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^\d{1,15}$/.test(value))
    throw errors.invalidRequest("Invalid value for 'cursor': use the next_cursor of the previous page", 'cursor');
  return Number(value);
}

/** The Idempotency-Key header, if any (the contract bounds its length). */
export function idempotencyKey(headers: Record<string, string | string[] | undefined>): string | undefined {
  const v = headers['idempotency-key'];
  return typeof v === 'string' && v.length ? v : undefined;
}

/** An expiry date for a key: a future time (ISO 8601), or null for never; absent: unchanged. */
export function expiryParam(v: string | null | undefined, param: string, now = Date.now()): number | null | undefined {
  if (v === undefined || v === null) return v;
  const t = Date.parse(v);
  if (!Number.isFinite(t)) throw errors.invalidRequest(`Invalid value for '${param}': must be a date-time`, param);
  if (t <= now) throw errors.invalidRequest(`Invalid value for '${param}': must be in the future`, param);
  return t;
}

function budgetView(k: ApiKey, now = Date.now()): Schemas['KeyBudget'] | null {
  if (k.budget_micros === null || !k.budget_period) return null;
  return {
    usd: formatUsd(k.budget_micros),
    period: k.budget_period,
    spent_usd: formatUsd(spentThisPeriod(k, now)),
    resets_at: iso(periodEnd(k.budget_period, now)),
  };
}

/** A key budget from a request: `{usd, period}` in micro-USD, or null for none; absent: unchanged. */
export function budgetParam(
  v: { usd: string | number; period: BudgetPeriod } | null | undefined,
): { micros: number; period: BudgetPeriod } | null | undefined {
  if (v === undefined || v === null) return v;
  return { micros: usdParam(v.usd, 'budget.usd'), period: v.period };
}
