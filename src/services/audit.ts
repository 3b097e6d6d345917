/**
 * The audit log: every state-changing operator action — through the admin API (as the admin token, or as the
 * operator whose session made the call) or the CLI (as
 * the system user who ran it) — with when, from which address, the action, what it acted on, and that thing's state
 * before and after (an account's balance and status, a key's limits; the answer the operator got). Secrets are
 * masked to their last 4 characters before anything is stored: redemption codes, keys, tokens, passwords. Rows are
 * only inserted; nothing updates or deletes them.
 */
import type { Knex } from 'knex';
import { getAccount } from '../accounts/accounts';
import { getKey } from '../accounts/keys';
import { getOperator, type Operator } from '../accounts/operators';
import { adminAccountView, operatorView } from './views';

export interface AuditEntry {
  /** `admin-token`, `operator:<id> <email>`, or `cli:<system user>`. */
  actor: string;
  /** The client's address (`local` for the CLI). */
  address: string;
  /** The operationId, or the CLI command. */
  action: string;
  /** What it acted on: `account:42`, `key:7`, `operator:3`; null for what has no single target (a batch of codes). */
  target: string | null;
  before: unknown;
  after: unknown;
}

export interface AuditRecord extends AuditEntry {
  id: number;
  created_at: string;
}

/** Property names whose values are secrets (a redemption code is money to whoever holds it). */
const SECRET = /secret|password|^token$|_token$|api_?key|^key$|^code$|^hash$/i;

const tail = (s: string) => `…${s.slice(-4)}`;

/** The value with every secret (by its property's name) cut to its last 4 characters, at any depth. */
export function masked(v: unknown, secret = false): unknown {
  if (typeof v === 'string') return secret ? tail(v) : v;
  if (Array.isArray(v)) return v.map((x) => masked(x, secret));
  if (!v || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, masked(x, secret || SECRET.test(k))]));
}

/** The state of what an action targets, as the audit log keeps it (null for no single target, or none found). */
export async function snapshot(db: Knex, target: string | null): Promise<unknown> {
  const [kind, id] = target?.split(':') ?? [];
  if (kind === 'account') {
    const a = await getAccount(db, Number(id));
    return a ? adminAccountView(a) : null;
  }
  if (kind === 'operator') {
    const o = await getOperator(db, Number(id));
    return o ? operatorView(o) : null;
  }
  if (kind === 'key') {
    const k = await getKey(db, Number(id));
    if (!k) return null;
    const { hash: _secret, ...rest } = k as unknown as Record<string, unknown>;
    return rest;
  }
  return null;
}

/** An operator as the audit log names it: `operator:<id> <email>` (the id stays, the email says who at a glance). */
export const operatorActor = (o: { id: number; email: string }) => `operator:${o.id} ${o.email}`;

/** What failed in a sign-in: the audit log says it, the caller is told only that it failed. */
export type SignInFailure = 'unknown_email' | 'password' | 'disabled' | 'code';

/**
 * An operator's sign-in (`signInOperator`), or a failed one (`signInOperatorFailed`, with what failed): as the
 * operator it was for, or, for an email no operator has, as `unknown <email>` with no target.
 */
export async function recordSignIn(
  db: Knex,
  s: { operator: Operator | null; email: string; address: string; failed?: SignInFailure },
): Promise<void> {
  const o = s.operator;
  await recordAudit(db, {
    actor: o ? operatorActor(o) : `unknown ${s.email.trim().toLowerCase()}`,
    address: s.address,
    action: s.failed ? 'signInOperatorFailed' : 'signInOperator',
    target: o ? `operator:${o.id}` : null,
    before: null,
    after: s.failed ? { failed: s.failed } : { second_factor: o?.totpEnabled ?? false },
  });
}

export async function recordAudit(db: Knex, e: AuditEntry): Promise<void> {
  const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(masked(v)));
  await db('audit_log').insert({
    created_at: Date.now(),
    actor: e.actor.slice(0, 200),
    address: e.address.slice(0, 100),
    action: e.action.slice(0, 64),
    target: e.target,
    before: json(e.before),
    after: json(e.after),
  });
}

/** Records newest first, `limit` at a time before `beforeId`, optionally of one action or target. */
export async function listAudit(
  db: Knex,
  o: { limit: number; beforeId?: number; action?: string; target?: string },
): Promise<AuditRecord[]> {
  const q = db('audit_log').orderBy('id', 'desc').limit(o.limit);
  if (o.beforeId !== undefined) q.where('id', '<', o.beforeId);
  if (o.action) q.where('action', o.action);
  if (o.target) q.where('target', o.target);
  const rows = await q;
  return rows.map((r: Record<string, unknown>) => ({
    id: Number(r.id),
    created_at: new Date(Number(r.created_at)).toISOString(),
    actor: String(r.actor),
    address: String(r.address),
    action: String(r.action),
    target: (r.target as string | null) ?? null,
    before: r.before ? JSON.parse(String(r.before)) : null,
    after: r.after ? JSON.parse(String(r.after)) : null,
  }));
}

/** Records as CSV (RFC 4180: every field quoted, quotes doubled), before and after as JSON. */
export function auditCsv(records: AuditRecord[]): string {
  const field = (v: unknown) =>
    `"${(typeof v === 'string' ? v : v === null ? '' : JSON.stringify(v)).replace(/"/g, '""')}"`;
  const head = ['id', 'created_at', 'actor', 'address', 'action', 'target', 'before', 'after'];
  const rows = records.map((r) => head.map((h) => field(r[h as keyof AuditRecord])).join(','));
  return `${[head.join(','), ...rows].join('\r\n')}\r\n`;
}
