/**
 * What the admin API and the CLI both do to accounts, keys and credits: one implementation, two front ends. A
 * change to a key or an account reaches the key cache of every process (see accounts/keyCache.ts).
 */
import type { Knex } from 'knex';
import { AccountError, getAccount, setAccountStatus, type Account } from '../accounts/accounts';
import type { KeyChange } from '../accounts/keyCache';
import { KeyError, setKeyEnabled, type ApiKey } from '../accounts/keys';
import { creditWithin } from '../billing/debt';
import { createCodes, type NewCode } from '../billing/redemption';
import { transact } from '../db';
import { post } from '../db/ledger';
import { idempotent } from './idempotency';
import { errors } from '../errors';
import { formatUsd } from '../money';
import type { App } from './app';
import { adminAccountView } from './views';

/** Who is told about a change to a key or an account (the key caches). */
export type Announce = (change: KeyChange) => void;

/** Enables or disables an account: a disabled one's keys are refused everywhere within 2 s (at once here). */
export async function setStatus(
  db: Knex,
  announce: Announce,
  accountId: number,
  status: Account['status'],
): Promise<Account> {
  const account = await setAccountStatus(db, accountId, status);
  announce({ accountId });
  return account;
}

/** The same for the admin API: an unknown account is a 404. */
export async function accountStatusView(app: Pick<App, 'db' | 'keys'>, accountId: number, status: Account['status']) {
  try {
    return adminAccountView(await setStatus(app.db, (c) => app.keys.changed(c), accountId, status));
  } catch (e) {
    if (e instanceof AccountError) throw errors.accountNotFound(accountId);
    throw e;
  }
}

export async function setKeyState(db: Knex, announce: Announce, keyId: number, enabled: boolean): Promise<ApiKey> {
  const key = await setKeyEnabled(db, keyId, enabled);
  announce({ keyId });
  return key;
}

/** A removal of credits larger than the balance. */
export class NotEnoughCredits extends AccountError {}

/** A grant or an adjustment done: its ledger row, the balance after it, and whether paying a debt ended a suspension. */
export interface Granted {
  ledger_id: number;
  balance_after: number;
  /** The account was suspended for its debt, which the grant paid: key caches must hear of it. */
  reactivated?: boolean;
}

/**
 * Credits an account — what it owes is paid first (billing/debt.ts) — or, for a negative amount, removes credits (an
 * adjustment, never below zero). Throws an AccountError for an unknown account, NotEnoughCredits for a removal larger
 * than the balance less what requests in flight hold (they may still spend it: the balance never goes below zero).
 */
export async function grantCredits(
  db: Knex,
  accountId: number,
  amountMicros: number,
  note: string | null,
): Promise<Granted> {
  if (!(await getAccount(db, accountId))) throw new AccountError(`no account ${accountId}`);
  if (amountMicros > 0) {
    const done = await transact(db, (trx) => creditWithin(trx, { accountId, kind: 'grant', amountMicros, note }));
    if (!done) throw new AccountError(`no account ${accountId}`);
    return { ledger_id: done.row.id, balance_after: done.balanceMicros, reactivated: done.reactivated };
  }
  const row = await post(db, { accountId, kind: 'adjustment', amountMicros, note }, { floor: 0 });
  if (!row) throw new NotEnoughCredits(`account ${accountId} has less than ${formatUsd(-amountMicros)} USD`);
  return { ledger_id: row.id, balance_after: row.balance_after };
}

/** grantCredits with an Idempotency-Key (admin API and CLI alike, so a key is one grant whichever front end retries). */
export function grantOnce(
  db: Knex,
  key: string | undefined,
  accountId: number,
  amountMicros: number,
  note: string | null,
): Promise<Granted> {
  return idempotent(db, 'grant', key, { accountId, amountMicros, note }, (trx) =>
    grantCredits(trx, accountId, amountMicros, note),
  );
}

/**
 * createCodes with an Idempotency-Key: a retry gets the same codes (kept with the key for 24 h). `createdBy`: who
 * makes them, as the audit log names them (a retry by someone else gets the first answer all the same).
 */
export function createCodesOnce(
  db: Knex,
  key: string | undefined,
  count: number,
  amountMicros: number,
  note: string | null,
  createdBy: string | null = null,
): Promise<NewCode[]> {
  return idempotent(db, 'codes', key, { count, amountMicros, note }, (trx) =>
    createCodes(trx, count, amountMicros, note, createdBy),
  );
}

export { AccountError, KeyError };
