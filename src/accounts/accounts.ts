/**
 * Accounts: an email, a status and a balance in micro-USD that only the ledger changes; for the console also a
 * password hash and a referral code.
 */
import crypto from 'node:crypto';
import { sha256Hex } from '../digest';
import type { Knex } from 'knex';
import { isUniqueViolation, transact } from '../db';
import { postWithin } from '../db/ledger';
import { insertId } from '../db/dialect';
import { requestCount } from '../db/queries/usage';

export interface Account {
  id: number;
  email: string;
  status: 'active' | 'disabled';
  balance_micros: number;
  created_at: number;
  referral_code: string;
  /** When the address was confirmed (a link mailed to it was opened), or null. */
  verified_at: number | null;
  /** Below this balance an alert is mailed (once per crossing), or null: no alert. */
  low_balance_micros: number | null;
  /** Owed because card payments came back after their credits were spent (billing/reversals.ts). */
  debt_micros: number;
}

export class AccountError extends Error {
  override name = 'AccountError';
}

/**
 * An address as the contract's `format: email` accepts it (ajv-formats): no quoting, comments, commas or angle
 * brackets — which nodemailer would read as other addresses (`me@gmail.com,1` is mailed to me@gmail.com yet is
 * another "mailbox" for the once-per-mailbox credits) — and no empty domain label (`ada@gmail.com.`).
 */
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

function toAccount(r: Record<string, unknown>): Account {
  return {
    id: Number(r.id),
    email: String(r.email),
    status: r.status as Account['status'],
    balance_micros: Number(r.balance_micros),
    created_at: Number(r.created_at),
    referral_code: String(r.referral_code),
    verified_at: r.verified_at === null || r.verified_at === undefined ? null : Number(r.verified_at),
    low_balance_micros:
      r.low_balance_micros === null || r.low_balance_micros === undefined ? null : Number(r.low_balance_micros),
    debt_micros: Number(r.debt_micros ?? 0),
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

/**
 * The mailbox an address reaches, for "once per address": lower case, without a `+tag` (every provider that has them
 * ignores them), and at Gmail without dots (gmail.com and googlemail.com are one).
 */
export function emailKey(email: string): string {
  const at = email.lastIndexOf('@');
  let local = email.slice(0, at).toLowerCase().split('+')[0];
  let domain = email.slice(at + 1).toLowerCase();
  if (domain === 'googlemail.com') domain = 'gmail.com';
  if (domain === 'gmail.com') local = local.replace(/\./g, '');
  return `${local}@${domain}`;
}

/** Inserts the account row, with a fresh referral code (drawn again in the unlikely case it is taken). */
async function insertAccount(
  db: Knex,
  row: {
    email: string;
    password_hash?: string | null;
    referred_by?: number | null;
    verified_at?: number | null;
    registered_from?: string | null;
  },
): Promise<number> {
  // In a transaction the insert runs in a savepoint of its own: on PostgreSQL a failed statement aborts the whole
  // transaction, and the lookup and the retry below must still run in it.
  const insert = (values: Record<string, unknown>) =>
    (db as Knex.Transaction).isTransaction
      ? db.transaction((sp) => insertId(sp, 'accounts', values))
      : insertId(db, 'accounts', values);
  for (let attempt = 0; ; attempt++) {
    try {
      return await insert({
        ...row,
        email_key: emailKey(row.email),
        status: 'active',
        balance_micros: 0,
        created_at: Date.now(),
        referral_code: randomCode(8),
      });
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      if (await db('accounts').where('email', row.email).first('id'))
        throw new EmailTaken(`an account with email ${row.email} already exists`);
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

export class DisposableEmail extends AccountError {
  override name = 'DisposableEmail';
}

export interface Registration {
  email: string;
  passwordHash: string;
  referralCode?: string | null;
  /** Mail domains refused (disposable mailboxes). */
  refusedDomains: string[];
  /** The client's address (an IPv6 one by its /64), for the admin's farming report. */
  registeredFrom?: string | null;
}

/**
 * A console sign-up: the account, unverified and without credits; the referrer (a valid code of an active account)
 * is recorded. Credits come when the address is confirmed (verifyEmail), so a made-up or throwaway address earns
 * nothing.
 */
export async function registerAccount(db: Knex, r: Registration): Promise<Account> {
  const email = normaliseEmail(r.email);
  const domain = email.slice(email.lastIndexOf('@') + 1);
  if (r.refusedDomains.some((d) => domain === d || domain.endsWith(`.${d}`)))
    throw new DisposableEmail(`addresses at ${domain} are not accepted`);
  let referrer: number | null = null;
  if (r.referralCode) {
    const row = await db('accounts')
      .where('referral_code', canonicalCode(r.referralCode))
      .andWhere('status', 'active')
      .first('id');
    if (!row) throw new UnknownReferralCode(`Unknown referral code: ${r.referralCode}`);
    referrer = Number(row.id);
  }
  const id = await insertAccount(db, {
    email,
    password_hash: r.passwordHash,
    referred_by: referrer,
    verified_at: null,
    registered_from: r.registeredFrom ?? null,
  });
  return (await getAccount(db, id))!;
}

export interface SignupCredits {
  starterMicros: number;
  referralMicros: number;
  /** Referral credits a referrer may earn per calendar month (UTC). */
  referralsPerMonth: number;
}

const mailboxRef = (key: string) => sha256Hex(key).slice(0, 40);

/**
 * Marks the address confirmed and pays what sign-up earns, once: the starter credits, once per mailbox (ref
 * `signup_<mailbox>`: a second account at the same mailbox, `+tag` or Gmail dots apart, gets none); and with a
 * referrer that is active, confirmed, another mailbox and under its monthly cap, the referral credits to both (refs
 * `referral_<mailbox>` and `referred_<mailbox>`). Returns false when it was confirmed already (nothing paid again).
 */
export function verifyEmail(db: Knex, accountId: number, c: SignupCredits, now = Date.now()): Promise<boolean> {
  return withSignupCredits(db, (trx) => verifyEmailWithin(trx, accountId, c, now));
}

/**
 * Runs a confirmation in a transaction — and once more when a confirmation of another account at the same mailbox,
 * at the same moment, paid the once-per-mailbox credits first (the ledger's unique ref refused ours): the second run
 * sees them paid and pays nothing, instead of failing.
 */
export async function withSignupCredits<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  try {
    return await transact(db, work);
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    return transact(db, work);
  }
}

/**
 * verifyEmail in the caller's transaction. The rows that decide are locked before anything is read — the account,
 * then its referrer — so that confirmations of two accounts referred by one referrer run one after the other and
 * the monthly cap counts what the other one paid (on MariaDB a plain read first would fix a snapshot taken before the
 * lock, and both would see the cap not reached yet).
 */
export async function verifyEmailWithin(
  trx: Knex.Transaction,
  accountId: number,
  c: SignupCredits,
  now = Date.now(),
): Promise<boolean> {
  const changed = await trx('accounts').where('id', accountId).whereNull('verified_at').update({ verified_at: now });
  if (!changed) return false;
  const account = await trx('accounts').where('id', accountId).forUpdate().first('email', 'email_key', 'referred_by');
  const referrer =
    account.referred_by === null
      ? null
      : await trx('accounts')
          .where('id', account.referred_by)
          .forUpdate()
          .first('id', 'status', 'verified_at', 'email', 'email_key');
  const ref = mailboxRef(String(account.email_key ?? emailKey(account.email)));
  const paid = async (kind: string, r: string) => !!(await trx('ledger').where({ kind, ref: r }).first('id'));
  if (c.starterMicros > 0 && !(await paid('signup', `signup_${ref}`))) {
    await postWithin(trx, { accountId, kind: 'signup', amountMicros: c.starterMicros, ref: `signup_${ref}` });
  }
  if (!referrer || c.referralMicros <= 0 || referrer.status !== 'active' || referrer.verified_at === null) return true;
  if (
    mailboxRef(String(referrer.email_key ?? emailKey(referrer.email))) === ref ||
    (await paid('referral', `referral_${ref}`))
  )
    return true;
  const month = new Date(now);
  const monthStart = Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1);
  const [{ n }] = (await trx('ledger')
    .where({ account_id: referrer.id, kind: 'referral' })
    .andWhere('ref', 'like', 'referred_%')
    .andWhere('created_at', '>=', monthStart)
    .count({ n: '*' })) as { n: unknown }[];
  if (Number(n) >= c.referralsPerMonth) return true;
  await postWithin(trx, { accountId, kind: 'referral', amountMicros: c.referralMicros, ref: `referral_${ref}` });
  await postWithin(trx, {
    accountId: Number(referrer.id),
    kind: 'referral',
    amountMicros: c.referralMicros,
    ref: `referred_${ref}`,
  });
  return true;
}

export async function findAccountByEmail(
  db: Knex,
  email: string,
): Promise<(Account & { password_hash: string | null }) | null> {
  const row = await db('accounts').where('email', email.trim().toLowerCase()).first();
  return row ? { ...toAccount(row), password_hash: (row.password_hash as string | null) ?? null } : null;
}

export async function setPasswordHash(db: Knex, id: number, hash: string): Promise<void> {
  await db('accounts').where('id', id).update({ password_hash: hash });
}

/**
 * Disables or enables an account. A disabled account's keys and console sessions stop working at once. It ends a
 * suspension for debt (billing/debt.ts): paying the debt later does not undo what the admin chose.
 */
export async function setAccountStatus(db: Knex, id: number, status: Account['status']): Promise<Account> {
  const n = await db('accounts').where('id', id).update({ status, suspended_for_debt: false });
  if (!n) throw new AccountError(`no account ${id}`);
  if (status === 'disabled') await db('sessions').where('account_id', id).del();
  return (await getAccount(db, id))!;
}

export interface AccountTotals {
  spent_micros: number;
  requests: number;
  topped_up_micros: number;
  referral_micros: number;
  /** Every credit received: the ledger rows that add money and are not spending (usage). */
  credited_micros: number;
}

/** Money spent on requests, requests made, money topped up (cards and codes), referral credits, all credits received. */
export async function accountTotals(db: Knex, id: number): Promise<AccountTotals> {
  const sums = (await db('ledger')
    .where('account_id', id)
    .select('kind')
    .sum({ total: 'amount_micros' })
    .groupBy('kind')) as { kind: string; total: unknown }[];
  const by = (kinds: string[]) => sums.filter((s) => kinds.includes(s.kind)).reduce((a, s) => a + Number(s.total), 0);
  const n = await requestCount(db, id);
  const [{ credited }] = (await db('ledger')
    .where('account_id', id)
    .andWhere('amount_micros', '>', 0)
    .andWhereNot('kind', 'usage')
    .sum({ credited: 'amount_micros' })) as { credited: unknown }[];
  return {
    credited_micros: Number(credited ?? 0),
    spent_micros: -by(['usage']),
    requests: Number(n),
    topped_up_micros: by(['topup', 'redemption']),
    referral_micros: by(['referral']),
  };
}

/** Creates an account; starting credits, if any, arrive as a `signup` ledger row. */
export async function createAccount(db: Knex, email: string, creditsMicros = 0): Promise<Account> {
  const normalised = normaliseEmail(email);
  if (!Number.isSafeInteger(creditsMicros) || creditsMicros < 0)
    throw new AccountError('starting credits must be >= 0');
  // One transaction: an account never exists without its starting credits.
  const id = await transact(db, async (trx) => {
    const created = await insertAccount(trx, { email: normalised, verified_at: Date.now() }); // made by an operator: nothing to confirm
    if (creditsMicros > 0)
      await postWithin(trx, {
        accountId: created,
        kind: 'signup',
        amountMicros: creditsMicros,
        ref: `signup_${created}`,
      });
    return created;
  });
  return (await getAccount(db, id))!;
}

export async function getAccount(db: Knex, id: number): Promise<Account | null> {
  const row = await db('accounts').where('id', id).first();
  return row ? toAccount(row) : null;
}

export async function listAccounts(
  db: Knex,
  opts: { limit?: number; afterId?: number; email?: string } = {},
): Promise<Account[]> {
  const q = db('accounts').orderBy('id');
  if (opts.afterId !== undefined) q.where('id', '>', opts.afterId);
  if (opts.email)
    q.whereRaw(`email like ? escape '!'`, [`%${opts.email.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`)}%`]);
  if (opts.limit !== undefined) q.limit(opts.limit);
  return (await q).map(toAccount);
}

/** Sets (or, with null, removes) the low-balance alert threshold; a new threshold is armed afresh. */
export async function setLowBalance(db: Knex, id: number, micros: number | null): Promise<Account> {
  if (micros !== null && (!Number.isSafeInteger(micros) || micros < 0))
    throw new AccountError('the threshold must be >= 0');
  const n = await db('accounts').where('id', id).update({ low_balance_micros: micros, low_balance_alerted: false });
  if (!n) throw new AccountError(`no account ${id}`);
  return (await getAccount(db, id))!;
}
