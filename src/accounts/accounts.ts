/**
 * Accounts: an email, a status and a balance in micro-USD that only the ledger changes; for the console also a
 * password hash and a referral code.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { isUniqueViolation, transact } from '../db';
import { postWithin } from '../billing/ledger';

export interface Account {
  id: number;
  email: string;
  status: 'active' | 'disabled';
  balance_micros: number;
  created_at: number;
  referral_code: string;
}

export class AccountError extends Error {
  override name = 'AccountError';
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function toAccount(r: Record<string, unknown>): Account {
  return {
    id: Number(r.id),
    email: String(r.email),
    status: r.status as Account['status'],
    balance_micros: Number(r.balance_micros),
    created_at: Number(r.created_at),
    referral_code: String(r.referral_code),
  };
}

/** Crockford's base32 without I, L, O, U: easy to read aloud and to type. */
const CODE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** `n` random characters of CODE_ALPHABET (5 bits each, no modulo bias: 256 is a multiple of 32). */
export function randomCode(n: number): string {
  return [...crypto.randomBytes(n)].map((b) => CODE_ALPHABET[b % 32]).join('');
}

/** Upper case, without spaces and dashes: how referral and redemption codes are compared. */
export function canonicalCode(code: string): string {
  return code.replace(/[\s-]+/g, '').toUpperCase();
}

export function normaliseEmail(email: string): string {
  const normalised = email.trim().toLowerCase();
  if (!EMAIL.test(normalised) || normalised.length > 320) throw new AccountError(`not an email address: ${email}`);
  return normalised;
}

/** Inserts the account row, with a fresh referral code (drawn again in the unlikely case it is taken). */
async function insertAccount(db: Knex, row: { email: string; password_hash?: string | null; referred_by?: number | null }): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    try {
      const [inserted] = await db('accounts').insert({
        ...row,
        status: 'active',
        balance_micros: 0,
        created_at: Date.now(),
        referral_code: randomCode(8),
      });
      return Number(typeof inserted === 'object' ? (inserted as { id: number }).id : inserted);
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      if (await db('accounts').where('email', row.email).first('id')) throw new EmailTaken(`an account with email ${row.email} already exists`);
      if (attempt >= 5) throw e;
    }
  }
}

export class EmailTaken extends AccountError {
  override name = 'EmailTaken';
}

export class UnknownReferralCode extends AccountError {
  override name = 'UnknownReferralCode';
}

export interface Registration {
  email: string;
  passwordHash: string;
  referralCode?: string | null;
  starterMicros: number;
  referralMicros: number;
}

/**
 * A console sign-up, in one transaction: the account, its starter credits (`signup`) and, with a valid referral
 * code of an active account, the referral credit for both accounts (`referral`, refs `referral_<new id>` and
 * `referred_<new id>`: unique, so it can only happen once per new account).
 */
export async function registerAccount(db: Knex, r: Registration): Promise<Account> {
  const email = normaliseEmail(r.email);
  let referrer: number | null = null;
  if (r.referralCode) {
    const row = await db('accounts').where('referral_code', canonicalCode(r.referralCode)).andWhere('status', 'active').first('id');
    if (!row) throw new UnknownReferralCode(`Unknown referral code: ${r.referralCode}`);
    referrer = Number(row.id);
  }
  const id = await transact(db, async (trx) => {
    const id = await insertAccount(trx, { email, password_hash: r.passwordHash, referred_by: referrer });
    if (r.starterMicros > 0) await postWithin(trx, { accountId: id, kind: 'signup', amountMicros: r.starterMicros, ref: `signup_${id}` });
    if (referrer !== null && r.referralMicros > 0) {
      await postWithin(trx, { accountId: id, kind: 'referral', amountMicros: r.referralMicros, ref: `referral_${id}` });
      await postWithin(trx, { accountId: referrer, kind: 'referral', amountMicros: r.referralMicros, ref: `referred_${id}` });
    }
    return id;
  });
  return (await getAccount(db, id))!;
}

export async function findAccountByEmail(db: Knex, email: string): Promise<(Account & { password_hash: string | null }) | null> {
  const row = await db('accounts').where('email', email.trim().toLowerCase()).first();
  return row ? { ...toAccount(row), password_hash: (row.password_hash as string | null) ?? null } : null;
}

export async function setPasswordHash(db: Knex, id: number, hash: string): Promise<void> {
  await db('accounts').where('id', id).update({ password_hash: hash });
}

/** Disables or enables an account. A disabled account's keys and console sessions stop working at once. */
export async function setAccountStatus(db: Knex, id: number, status: Account['status']): Promise<Account> {
  const n = await db('accounts').where('id', id).update({ status });
  if (!n) throw new AccountError(`no account ${id}`);
  if (status === 'disabled') await db('sessions').where('account_id', id).del();
  return (await getAccount(db, id))!;
}

export interface AccountTotals {
  spent_micros: number;
  requests: number;
  topped_up_micros: number;
  referral_micros: number;
}

/** Money spent on requests, requests made, money topped up (cards and codes), referral credits received. */
export async function accountTotals(db: Knex, id: number): Promise<AccountTotals> {
  const sums = (await db('ledger').where('account_id', id).select('kind').sum({ total: 'amount_micros' }).groupBy('kind')) as { kind: string; total: unknown }[];
  const by = (kinds: string[]) => sums.filter((s) => kinds.includes(s.kind)).reduce((a, s) => a + Number(s.total), 0);
  const [{ n }] = (await db('usage_records').where('account_id', id).count({ n: '*' })) as { n: unknown }[];
  return { spent_micros: -by(['usage']), requests: Number(n), topped_up_micros: by(['topup', 'redemption']), referral_micros: by(['referral']) };
}

/** Creates an account; starting credits, if any, arrive as a `signup` ledger row. */
export async function createAccount(db: Knex, email: string, creditsMicros = 0): Promise<Account> {
  const normalised = normaliseEmail(email);
  if (!Number.isSafeInteger(creditsMicros) || creditsMicros < 0) throw new AccountError('starting credits must be >= 0');
  // One transaction: an account never exists without its starting credits.
  const id = await transact(db, async (trx) => {
    const created = await insertAccount(trx, { email: normalised });
    if (creditsMicros > 0) await postWithin(trx, { accountId: created, kind: 'signup', amountMicros: creditsMicros, ref: `signup_${created}` });
    return created;
  });
  return (await getAccount(db, id))!;
}

export async function getAccount(db: Knex, id: number): Promise<Account | null> {
  const row = await db('accounts').where('id', id).first();
  return row ? toAccount(row) : null;
}

export async function listAccounts(db: Knex, opts: { limit?: number; afterId?: number; email?: string } = {}): Promise<Account[]> {
  const q = db('accounts').orderBy('id');
  if (opts.afterId !== undefined) q.where('id', '>', opts.afterId);
  if (opts.email) q.whereRaw(`email like ? escape '!'`, [`%${opts.email.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`)}%`]);
  if (opts.limit !== undefined) q.limit(opts.limit);
  return (await q).map(toAccount);
}
