/**
 * What the operator's pages read: an account with its keys, ledger, usage and sign-ins; keys found by prefix;
 * redemption codes and who redeemed them; usage records of every account and a request's receipt. Presenters and
 * queries only: what changes state is in admin.ts and the domain modules.
 */
import type { Knex } from 'knex';
import type { components } from '../../generated/openapi';
import { getAccount } from '../accounts/accounts';
import { findKeys, keyLive, listKeys, type ApiKey } from '../accounts/keys';
import type { CodeRecord } from '../billing/redemption';
import { eachUsageRecord, usageActivity, type UsageFilter, type UsageRecord } from '../db/queries/usage';
import { errors } from '../errors';
import { formatUsd } from '../money';
import { USAGE_CLASSES } from '../usage';
import { adminAccountView, keyView, timeParam, USAGE_CLASS_VIEWS, usageCountsView } from './views';

type Schemas = components['schemas'];

const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

export function adminKeyView(k: ApiKey, email: string, now = Date.now()): Schemas['AdminKey'] {
  const v = keyView(k);
  return {
    id: k.id,
    account_id: k.account_id,
    email,
    name: k.name,
    prefix: k.prefix,
    status: !k.enabled ? 'disabled' : keyLive(k, now) ? 'active' : 'expired',
    enabled: k.enabled,
    quota_usd: v.quota_usd,
    used_usd: v.used_usd,
    budget: v.budget,
    expires_at: v.expires_at,
    last_used_at: v.last_used_at,
    created_at: v.created_at,
  };
}

/** Keys of every account (or one), found by prefix, `limit` at a time after the cursor. */
export async function keysPage(db: Knex, o: { prefix?: string; accountId?: number; afterId?: number; limit: number }) {
  const rows = await findKeys(db, { ...o, limit: o.limit + 1 });
  return {
    data: rows.slice(0, o.limit).map((k) => adminKeyView(k, k.email)),
    next_cursor: rows.length > o.limit ? String(rows[o.limit - 1].id) : null,
  };
}

export function ledgerView(r: Record<string, unknown>): Schemas['AdminLedgerEntry'] {
  return {
    id: Number(r.id),
    kind: r.kind as Schemas['LedgerKind'],
    amount_usd: formatUsd(Number(r.amount_micros)),
    balance_after_usd: formatUsd(Number(r.balance_after)),
    ref: (r.ref as string | null) ?? null,
    key_id: r.key_id === null || r.key_id === undefined ? null : Number(r.key_id),
    model: (r.model as string | null) ?? null,
    note: (r.note as string | null) ?? null,
    created_at: iso(Number(r.created_at)),
  };
}

const DAY = 24 * 3_600_000;

async function usageWindow(db: Knex, accountId: number, since: number): Promise<Schemas['UsageWindow']> {
  const a = await usageActivity(db, { accountId, from: since });
  return { requests: a.requests, spend_usd: formatUsd(a.cost_micros), spend_micros: a.cost_micros };
}

/** An account with its keys, its latest 50 ledger rows, its usage over a day and 30 days, and where it signed in. */
export async function accountDetail(db: Knex, id: number, now = Date.now()): Promise<Schemas['AdminAccountDetail']> {
  const account = await getAccount(db, id);
  if (!account) throw errors.accountNotFound(id);
  const [keys, ledger, day, month, signIns] = await Promise.all([
    listKeys(db, id),
    db('ledger').where('account_id', id).orderBy('id', 'desc').limit(50),
    usageWindow(db, id, now - DAY),
    usageWindow(db, id, now - 30 * DAY),
    db('login_addresses').where('account_id', id).orderBy('last_at', 'desc').limit(50),
  ]);
  return {
    account: adminAccountView(account),
    email_verified: account.verified_at !== null,
    keys: keys.map((k) => adminKeyView(k, account.email, now)),
    ledger: ledger.map(ledgerView),
    usage: { day, month },
    sign_ins: signIns.map((r: Record<string, unknown>) => ({ at: iso(Number(r.last_at)), address: String(r.address) })),
  };
}

/** A code as the list shows it: never whole (only its hash is stored), its first characters and an ellipsis. */
export function codeView(c: CodeRecord): Schemas['RedemptionCodeView'] {
  return {
    id: c.id,
    batch: c.batch,
    code: `${c.prefix}-…`,
    amount_usd: formatUsd(c.amount_micros),
    note: c.note,
    created_at: iso(c.created_at),
    created_by: c.created_by,
    redeemed_at: isoOrNull(c.redeemed_at),
    redeemed_by: c.redeemed_by,
  };
}

/**
 * One CSV line (RFC 4180: every field quoted, quotes doubled; null is empty), ended with CRLF. Text that a
 * spreadsheet would run as a formula (`=`, `+`, `-`, `@` first: an email may start so) gets a `'` before it.
 */
export const csvLine = (values: unknown[]) =>
  `${values.map((v) => `"${(v === null || v === undefined ? '' : inert(v)).replace(/"/g, '""')}"`).join(',')}\r\n`;

const inert = (v: unknown) => (typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : String(v));

export function codesCsv(codes: Schemas['RedemptionCodeView'][]): string {
  const head =
    'id,batch,code,amount_usd,note,created_at,created_by,redeemed_at,redeemed_by_account_id,redeemed_by_email';
  const rows = codes.map((c) =>
    csvLine([
      c.id,
      c.batch,
      c.code,
      c.amount_usd,
      c.note,
      c.created_at,
      c.created_by,
      c.redeemed_at,
      c.redeemed_by?.account_id,
      c.redeemed_by?.email,
    ]),
  );
  return [`${head}\r\n`, ...rows].join('');
}

/** Whether an answer is asked for as CSV: `format=csv`, or an Accept header that names text/csv. */
export function wantsCsv(format: string | undefined, headers: Record<string, string | string[] | undefined>): boolean {
  if (format) return format === 'csv';
  const accept = headers.accept;
  return (Array.isArray(accept) ? accept.join(',') : (accept ?? '')).includes('text/csv');
}

export function usageRecordView(r: UsageRecord): Schemas['AdminUsageRecord'] {
  return {
    id: r.id,
    request_id: r.request_id,
    account_id: r.account_id,
    key_id: r.key_id,
    model: r.model,
    provider: r.provider,
    endpoint: r.endpoint,
    status: r.status,
    usage: usageCountsView(r).usage,
    counted: r.counted as Schemas['AdminUsageRecord']['counted'],
    cost_usd: formatUsd(r.cost_micros),
    cost_micros: r.cost_micros,
    latency_ms: r.latency_ms,
    ttfb_ms: r.ttfb_ms,
    created_at: iso(r.created_at),
  };
}

const USAGE_HEAD = [
  'id',
  'request_id',
  'created_at',
  'account_id',
  'key_id',
  'model',
  'provider',
  'endpoint',
  'status',
  'counted',
  ...USAGE_CLASSES.map((c) => c.name),
  'cost_usd',
  'latency_ms',
  'ttfb_ms',
];

/** Every record of the filter from `beforeId` on as CSV lines, read a batch at a time as the client takes them. */
export async function* usageCsv(db: Knex, f: UsageFilter, beforeId?: number): AsyncGenerator<Uint8Array> {
  yield Buffer.from(csvLine(USAGE_HEAD));
  for await (const r of eachUsageRecord(db, f, beforeId)) {
    const v = usageRecordView(r);
    yield Buffer.from(
      csvLine([
        v.id,
        v.request_id,
        v.created_at,
        v.account_id,
        v.key_id,
        v.model,
        v.provider,
        v.endpoint,
        v.status,
        v.counted,
        ...USAGE_CLASSES.map((c) => v.usage[c.name]),
        v.cost_usd,
        v.latency_ms,
        v.ttfb_ms,
      ]),
    );
  }
}

const COUNTED: Record<string, string> = {
  upstream: 'The counts are what the upstream reported.',
  tokenizer:
    'The upstream reported no usage (or a stream was cut before it did): the gateway counted the prompt and every delta that went by with its tokenizer, never less than what the upstream had reported so far.',
  checkpoint:
    'The gateway process serving it stopped before it settled: it was charged what it had certainly cost at its last checkpoint.',
  none: 'No upstream answered: nothing was used, nothing charged.',
};

/** A request's receipt: its record, how it was counted, its hold, its charge and its ledger rows. */
export async function receipt(db: Knex, r: UsageRecord): Promise<Schemas['UsageReceipt']> {
  const ledger = await db('ledger').where('ref', r.request_id).andWhere('account_id', r.account_id).orderBy('id');
  const uncovered = ledger
    .filter((l: Record<string, unknown>) => l.kind === 'shortfall')
    .reduce((s: number, l: Record<string, unknown>) => s + Number(l.uncovered_micros ?? 0), 0);
  return {
    record: usageRecordView(r),
    counted: { by: r.counted as Schemas['UsageReceipt']['counted']['by'], explanation: COUNTED[r.counted] ?? '' },
    classes: USAGE_CLASS_VIEWS,
    hold:
      r.held_micros === null
        ? null
        : {
            usd: formatUsd(r.held_micros),
            micros: r.held_micros,
            prompt_tokens: r.held_prompt_tokens ?? 0,
            output_tokens: r.held_output_tokens ?? 0,
          },
    charge: { usd: formatUsd(r.cost_micros), micros: r.cost_micros, uncovered_usd: formatUsd(uncovered) },
    ledger: ledger.map(ledgerView),
  };
}

/**
 * `from` / `to` of the admin API: an ISO 8601 date or date-time (as the console's), or epoch seconds (10 digits or
 * fewer) or milliseconds; a 400 naming the parameter otherwise.
 */
export function instantParam(value: string | undefined, param: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (/^\d{1,15}$/.test(value)) return value.length <= 10 ? Number(value) * 1000 : Number(value);
  return timeParam(value, param);
}
