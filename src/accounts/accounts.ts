/** Accounts: an email, a status and a balance in micro-USD that only the ledger changes. */
import type { Knex } from 'knex';
import { isUniqueViolation } from '../db';
import { post } from '../billing/ledger';

export interface Account {
  id: number;
  email: string;
  status: 'active' | 'disabled';
  balance_micros: number;
  created_at: number;
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
  };
}

/** Creates an account; starting credits, if any, arrive as a `signup` ledger row. */
export async function createAccount(db: Knex, email: string, creditsMicros = 0): Promise<Account> {
  const normalised = email.trim().toLowerCase();
  if (!EMAIL.test(normalised)) throw new AccountError(`not an email address: ${email}`);
  if (!Number.isSafeInteger(creditsMicros) || creditsMicros < 0) throw new AccountError('starting credits must be >= 0');
  let id: number;
  try {
    const [inserted] = await db('accounts').insert({ email: normalised, status: 'active', balance_micros: 0, created_at: Date.now() });
    id = Number(typeof inserted === 'object' ? (inserted as { id: number }).id : inserted);
  } catch (e) {
    if (isUniqueViolation(e)) throw new AccountError(`an account with email ${normalised} already exists`);
    throw e;
  }
  if (creditsMicros > 0) await post(db, { accountId: id, kind: 'signup', amountMicros: creditsMicros, ref: `signup_${id}` });
  return (await getAccount(db, id))!;
}

export async function getAccount(db: Knex, id: number): Promise<Account | null> {
  const row = await db('accounts').where('id', id).first();
  return row ? toAccount(row) : null;
}

export async function listAccounts(db: Knex): Promise<Account[]> {
  return (await db('accounts').orderBy('id')).map(toAccount);
}
