/**
 * The tokens of links mailed to an account's address — `verify` (confirm the address, 48 h) and `reset` (set a new
 * password, 1 h): random, single use, expiring; only their SHA-256 is stored, so a leaked table opens nothing.
 */
import crypto from 'node:crypto';
import { sha256Hex } from '../digest';
import type { Knex } from 'knex';
import { transact } from '../db';

export type TokenPurpose = 'verify' | 'reset';

export const TOKEN_TTL_MS: Record<TokenPurpose, number> = { verify: 48 * 3_600_000, reset: 3_600_000 };

/**
 * A new token for the account (earlier unused ones of the same purpose stop working). On MariaDB the UPDATE takes a
 * gap lock even when it matches nothing, so two sign-ups at once can deadlock on their INSERTs: `transact` retries.
 */
export async function issueToken(
  db: Knex,
  accountId: number,
  purpose: TokenPurpose,
  now = Date.now(),
): Promise<string> {
  const token = crypto.randomBytes(32).toString('base64url');
  await transact(db, async (trx) => {
    await trx('email_tokens').where({ account_id: accountId, purpose }).whereNull('used_at').update({ used_at: now });
    await trx('email_tokens').insert({
      account_id: accountId,
      purpose,
      token_hash: sha256Hex(token),
      expires_at: now + TOKEN_TTL_MS[purpose],
      created_at: now,
    });
  });
  return token;
}

/** The account a live token of this purpose was issued to, without using it up; null when there is none. */
export async function peekToken(
  db: Knex,
  token: string,
  purpose: TokenPurpose,
  now = Date.now(),
): Promise<number | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return null;
  const row = await db('email_tokens')
    .where({ token_hash: sha256Hex(token), purpose })
    .whereNull('used_at')
    .andWhere('expires_at', '>', now)
    .first('account_id');
  return row ? Number(row.account_id) : null;
}

/** Uses a token up: the account it was issued to, or null when it is unknown, used, expired or for another purpose. */
export async function consumeToken(
  db: Knex,
  token: string,
  purpose: TokenPurpose,
  now = Date.now(),
): Promise<number | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return null;
  const h = sha256Hex(token);
  const used = await db('email_tokens')
    .where({ token_hash: h, purpose })
    .whereNull('used_at')
    .andWhere('expires_at', '>', now)
    .update({ used_at: now });
  if (!used) return null;
  const row = await db('email_tokens').where('token_hash', h).forUpdate().first('account_id'); // a locking read: see verifyEmailWithin
  return row ? Number(row.account_id) : null;
}

/**
 * The account a token of this purpose was ever issued to, whether or not it is used or expired; null for an unknown
 * one. Only for telling a link opened twice from a forged one — never to act on the account.
 */
export async function issuedTo(db: Knex, token: string, purpose: TokenPurpose): Promise<number | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return null;
  const row = await db('email_tokens')
    .where({ token_hash: sha256Hex(token), purpose })
    .first('account_id');
  return row ? Number(row.account_id) : null;
}
