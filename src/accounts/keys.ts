/**
 * API keys: `sk-` + 48 random base62 characters. Only the SHA-256 of a key is stored (the key has 285 bits of
 * entropy, so a plain hash cannot be reversed by guessing), with a short display prefix such as `sk-Ab3dE9`.
 */
import crypto from 'node:crypto';
import { sha256Hex } from '../digest';
import type { Knex } from 'knex';
import { SCOPES, type Scope } from '../contract';
import { insertId, likeOperator } from '../db/dialect';

/** The scopes a key may have are the contract's (KeyScope): an operation needs one of them. */
export { SCOPES, type Scope };

export type BudgetPeriod = 'day' | 'week' | 'month';
export const BUDGET_PERIODS: readonly BudgetPeriod[] = ['day', 'week', 'month'];

export interface ApiKey {
  id: number;
  account_id: number;
  name: string | null;
  prefix: string;
  enabled: boolean;
  quota_micros: number | null;
  used_micros: number;
  /** Reserved by requests in flight. */
  held_micros: number;
  /** Requests / tokens per minute; null: the configuration's default. */
  rpm_limit: number | null;
  tpm_limit: number | null;
  /** Allowed model ids, or null for every model. */
  models: string[] | null;
  scopes: Scope[];
  created_at: number;
  last_used_at: number | null;
  /** Epoch ms after which the key is refused (401 Invalid API key), or null: never. */
  expires_at: number | null;
  /** At most this much per UTC `budget_period` (billing/budgets.ts), or null: no budget. */
  budget_micros: number | null;
  budget_period: BudgetPeriod | null;
  /** The period `budget_used_micros` belongs to (its start, epoch ms). */
  budget_start: number;
  budget_used_micros: number;
}

/** What a request authenticated with a key may do. */
export interface KeyPrincipal {
  key: ApiKey;
  accountId: number;
}

export class KeyError extends Error {
  override name = 'KeyError';
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const KEY_FORMAT = /^sk-[A-Za-z0-9_-]{32,200}$/;

export function generateKey(): string {
  let out = 'sk-';
  while (out.length < 51) {
    for (const b of crypto.randomBytes(64)) {
      if (b < 248 && out.length < 51) out += ALPHABET[b % 62]; // 248 = 4 * 62: no modulo bias
    }
  }
  return out;
}

export function hashKey(key: string): string {
  return sha256Hex(key);
}

function toKey(r: Record<string, unknown>): ApiKey {
  return {
    id: Number(r.id),
    account_id: Number(r.account_id),
    name: (r.name as string | null) ?? null,
    prefix: String(r.prefix),
    enabled: Boolean(r.enabled),
    quota_micros: r.quota_micros === null || r.quota_micros === undefined ? null : Number(r.quota_micros),
    used_micros: Number(r.used_micros),
    held_micros: Number(r.held_micros ?? 0),
    rpm_limit: r.rpm_limit === null || r.rpm_limit === undefined ? null : Number(r.rpm_limit),
    tpm_limit: r.tpm_limit === null || r.tpm_limit === undefined ? null : Number(r.tpm_limit),
    models: r.models ? (JSON.parse(String(r.models)) as string[]) : null,
    scopes: String(r.scopes).split(',').filter(Boolean) as Scope[],
    created_at: Number(r.created_at),
    last_used_at: r.last_used_at === null || r.last_used_at === undefined ? null : Number(r.last_used_at),
    expires_at: r.expires_at === null || r.expires_at === undefined ? null : Number(r.expires_at),
    budget_micros: r.budget_micros === null || r.budget_micros === undefined ? null : Number(r.budget_micros),
    budget_period: (r.budget_period as BudgetPeriod | null | undefined) ?? null,
    budget_start: Number(r.budget_start ?? 0),
    budget_used_micros: Number(r.budget_used_micros ?? 0),
  };
}

export interface NewKey {
  accountId: number;
  name?: string | null;
  quotaMicros?: number | null;
  models?: string[] | null;
  scopes?: Scope[];
  enabled?: boolean;
  rpmLimit?: number | null;
  tpmLimit?: number | null;
  /** Epoch ms; null: never. */
  expiresAt?: number | null;
  /** A budget per period; null: none. */
  budget?: { micros: number; period: BudgetPeriod } | null;
}

/** Creates a key and returns it with its secret, which is shown this once and never stored. */
/** Throws a KeyError naming the first invalid setting. */
function checkSettings(k: Omit<Partial<NewKey>, 'accountId'>): void {
  if (k.scopes !== undefined) {
    const bad = k.scopes.filter((s) => !SCOPES.includes(s));
    if (bad.length || !k.scopes.length)
      throw new KeyError(`scopes must be a non-empty list of ${SCOPES.join(', ')}; got ${k.scopes.join(',')}`);
  }
  if (
    k.quotaMicros !== undefined &&
    k.quotaMicros !== null &&
    (!Number.isSafeInteger(k.quotaMicros) || k.quotaMicros < 0)
  ) {
    throw new KeyError('quota must be >= 0');
  }
  for (const [name, v] of [
    ['rpm', k.rpmLimit],
    ['tpm', k.tpmLimit],
  ] as const) {
    if (v !== undefined && v !== null && (!Number.isSafeInteger(v) || v < 0))
      throw new KeyError(`${name} limit must be a whole number >= 0`);
  }
  if (k.models && (!k.models.length || k.models.some((m) => !m)))
    throw new KeyError('models must be a non-empty list of model ids');
  if (k.expiresAt !== undefined && k.expiresAt !== null && (!Number.isSafeInteger(k.expiresAt) || k.expiresAt <= 0))
    throw new KeyError('expiry must be a date');
  if (
    k.budget &&
    (!Number.isSafeInteger(k.budget.micros) || k.budget.micros < 0 || !BUDGET_PERIODS.includes(k.budget.period))
  )
    throw new KeyError(`a budget is an amount >= 0 per ${BUDGET_PERIODS.join(', ')}`);
}

/** Whether a key may still be used at `now`. */
export const keyLive = (key: ApiKey, now: number) => key.expires_at === null || key.expires_at > now;

export async function createKey(db: Knex, k: NewKey): Promise<{ key: ApiKey; secret: string }> {
  const scopes = k.scopes ?? [...SCOPES];
  checkSettings({ ...k, scopes });
  if (!(await db('accounts').where('id', k.accountId).first('id'))) throw new KeyError(`no account ${k.accountId}`);
  const secret = generateKey();
  const id = await insertId(db, 'api_keys', {
    account_id: k.accountId,
    name: k.name ?? null,
    prefix: secret.slice(0, 9),
    hash: hashKey(secret),
    enabled: k.enabled ?? true,
    quota_micros: k.quotaMicros ?? null,
    used_micros: 0,
    models: k.models ? JSON.stringify(k.models) : null,
    scopes: scopes.join(','),
    rpm_limit: k.rpmLimit ?? null,
    tpm_limit: k.tpmLimit ?? null,
    expires_at: k.expiresAt ?? null,
    budget_micros: k.budget?.micros ?? null,
    budget_period: k.budget?.period ?? null,
    created_at: Date.now(),
  });
  return { key: (await getKey(db, id))!, secret };
}

export async function getKey(db: Knex, id: number): Promise<ApiKey | null> {
  const row = await db('api_keys').where('id', id).first();
  return row ? toKey(row) : null;
}

/** The display prefix's length: `sk-` and 6 characters. */
const PREFIX_LENGTH = 9;

/**
 * Keys of every account with their account's email, in id order after `afterId`. `prefix`: those whose display
 * prefix starts with it; longer than a prefix, the key it starts with — found by its hash when it is a whole key, so
 * a key pasted in full finds exactly itself.
 */
export async function findKeys(
  db: Knex,
  o: { prefix?: string; accountId?: number; afterId?: number; limit: number },
): Promise<(ApiKey & { email: string })[]> {
  const q = db('api_keys as k').join('accounts as a', 'a.id', 'k.account_id').orderBy('k.id').limit(o.limit);
  const p = o.prefix?.trim();
  if (p && KEY_FORMAT.test(p)) q.where('k.hash', hashKey(p));
  else if (p && p.length >= PREFIX_LENGTH) q.where('k.prefix', p.slice(0, PREFIX_LENGTH));
  // Case-insensitive on every database, as MySQL's collation and SQLite's LIKE are (ILIKE on PostgreSQL).
  else if (p) q.whereRaw(`k.prefix ${likeOperator(db)} ? escape '!'`, [`${p.replace(/[!%_]/g, (c) => `!${c}`)}%`]);
  if (o.accountId !== undefined) q.andWhere('k.account_id', o.accountId);
  if (o.afterId !== undefined) q.andWhere('k.id', '>', o.afterId);
  const rows = (await q.select('k.*', 'a.email as account_email')) as Record<string, unknown>[];
  return rows.map((r) => ({ ...toKey(r), email: String(r.account_email) }));
}

export async function listKeys(db: Knex, accountId: number): Promise<ApiKey[]> {
  return (await db('api_keys').where('account_id', accountId).orderBy('id')).map(toKey);
}

export type KeyChanges = Pick<
  NewKey,
  'name' | 'quotaMicros' | 'models' | 'scopes' | 'enabled' | 'expiresAt' | 'budget'
>;

/**
 * Changes a key's settings (only the ones given; null quota = no quota, null models = every model). With
 * `accountId`, only a key of that account is found. Returns null when there is no such key.
 */
export async function updateKey(db: Knex, id: number, changes: KeyChanges, accountId?: number): Promise<ApiKey | null> {
  checkSettings(changes);
  const row: Record<string, unknown> = {};
  if (changes.name !== undefined) row.name = changes.name;
  if (changes.enabled !== undefined) row.enabled = changes.enabled;
  if (changes.quotaMicros !== undefined) row.quota_micros = changes.quotaMicros;
  if (changes.models !== undefined) row.models = changes.models === null ? null : JSON.stringify(changes.models);
  if (changes.scopes !== undefined) row.scopes = changes.scopes.join(',');
  if (changes.expiresAt !== undefined) row.expires_at = changes.expiresAt;
  if (changes.budget !== undefined)
    Object.assign(row, {
      budget_micros: changes.budget?.micros ?? null,
      budget_period: changes.budget?.period ?? null,
    });
  const q = db('api_keys').where('id', id);
  if (accountId !== undefined) q.andWhere('account_id', accountId);
  if (!(await q.clone().first('id'))) return null;
  if (Object.keys(row).length) await q.clone().update(row);
  const found = await q.first();
  return found ? toKey(found) : null;
}

/**
 * Deletes a key: /v1 refuses it from the next request on (every request looks its key up). Its usage and ledger
 * rows stay. With `accountId`, only a key of that account is deleted. Returns false when there was no such key.
 */
export async function deleteKey(db: Knex, id: number, accountId?: number): Promise<boolean> {
  const q = db('api_keys').where('id', id);
  if (accountId !== undefined) q.andWhere('account_id', accountId);
  return (await q.del()) > 0;
}

export async function setKeyEnabled(db: Knex, id: number, enabled: boolean): Promise<ApiKey> {
  const n = await db('api_keys').where('id', id).update({ enabled });
  if (!n) throw new KeyError(`no key ${id}`);
  return (await getKey(db, id))!;
}

/** The key in an `Authorization: Bearer sk-...` header, or null when the header is missing or malformed. */
export function bearerKey(authorization: string | undefined): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m && KEY_FORMAT.test(m[1]) ? m[1] : null;
}

/** Why a real key is refused: its owner or an operator disabled it, or it passed its expiry date. */
export interface KeyRefusal {
  refused: 'key_disabled' | 'key_expired';
  /** The key and its account: a refusal of a real key is counted for its owner's usage page. */
  keyId: number;
  accountId: number;
}

/** What a key's hash resolves to: its principal, why it is refused, or null (unknown, or its account not active). */
export type KeyLookup = KeyPrincipal | KeyRefusal | null;

export const isRefusal = (k: KeyLookup): k is KeyRefusal => !!k && 'refused' in k;

/**
 * The principal of a key by its hash. A key that is disabled or expired says so (only to whoever holds its secret);
 * an unknown key, or one whose account is suspended or closed, is null.
 */
export async function principalByHash(db: Knex, hash: string, now = Date.now()): Promise<KeyLookup> {
  const row = await db('api_keys as k')
    .join('accounts as a', 'a.id', 'k.account_id')
    .where('k.hash', hash)
    .first('k.*', 'a.status as account_status');
  if (!row || row.account_status !== 'active') return null;
  const key = toKey(row);
  const refusal = { keyId: key.id, accountId: key.account_id };
  if (!row.enabled) return { refused: 'key_disabled', ...refusal };
  return keyLive(key, now) ? { key, accountId: key.account_id } : { refused: 'key_expired', ...refusal };
}

/** Resolves an Authorization header to the key's principal, or null when it names no usable key (see principalByHash). */
export async function authenticate(db: Knex, authorization: string | undefined): Promise<KeyPrincipal | null> {
  const key = bearerKey(authorization);
  const found = key ? await principalByHash(db, hashKey(key)) : null;
  return isRefusal(found) ? null : found;
}

const lastUseWrites = new Map<number, number>();

/**
 * Records that a key was used, writing at most once a minute per key and process, in the background (on the hot
 * path this is one map look-up: no promise, no query).
 */
export function touchKey(db: Knex, keyId: number, onError: (e: unknown) => void, now = Date.now()): void {
  if ((lastUseWrites.get(keyId) ?? 0) > now - 60_000) return;
  lastUseWrites.set(keyId, now);
  db('api_keys').where('id', keyId).update({ last_used_at: now }).then(undefined, onError);
}

export function keyAllowsModel(key: ApiKey, model: string): boolean {
  return key.models === null || key.models.includes(model);
}
