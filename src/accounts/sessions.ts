/**
 * Console log-in sessions. The cookie carries a random 32-byte id; the table stores only its SHA-256, the account,
 * the expiry and the session's CSRF token (sent back by the browser in `x-csrf-token` on state-changing calls).
 */
import crypto from 'node:crypto';
import { sha256Hex } from '../digest';
import type { Knex } from 'knex';

export interface Session {
  idHash: string;
  accountId: number;
  csrfToken: string;
  expiresAt: number;
}

const ID_FORMAT = /^[A-Za-z0-9_-]{43}$/; // 32 bytes, base64url

/** Creates a session; returns the id for the cookie (never stored) and the session. */
export async function createSession(
  db: Knex,
  accountId: number,
  ttlMs: number,
  now = Date.now(),
): Promise<{ id: string; session: Session }> {
  const id = crypto.randomBytes(32).toString('base64url');
  const session: Session = {
    idHash: sha256Hex(id),
    accountId,
    csrfToken: crypto.randomBytes(24).toString('base64url'),
    expiresAt: now + ttlMs,
  };
  await db('sessions').insert({
    id_hash: session.idHash,
    account_id: accountId,
    csrf_token: session.csrfToken,
    created_at: now,
    expires_at: session.expiresAt,
  });
  // Now and then, forget sessions that expired long ago.
  if (Math.random() < 0.02)
    void db('sessions')
      .where('expires_at', '<', now)
      .del()
      .catch(() => undefined);
  return { id, session };
}

/** The live session of a cookie value, or null (unknown, expired, or the account is disabled). */
export async function findSession(db: Knex, id: string | undefined, now = Date.now()): Promise<Session | null> {
  if (!id || !ID_FORMAT.test(id)) return null;
  const row = await db('sessions as s')
    .join('accounts as a', 'a.id', 's.account_id')
    .where('s.id_hash', sha256Hex(id))
    .andWhere('s.expires_at', '>', now)
    .andWhere('a.status', 'active')
    .first('s.id_hash', 's.account_id', 's.csrf_token', 's.expires_at');
  return row
    ? {
        idHash: row.id_hash,
        accountId: Number(row.account_id),
        csrfToken: row.csrf_token,
        expiresAt: Number(row.expires_at),
      }
    : null;
}

export async function deleteSession(db: Knex, idHash: string): Promise<void> {
  await db('sessions').where('id_hash', idHash).del();
}

/** Constant-time comparison of the CSRF header with the session's token. */
export function csrfMatches(session: Pick<Session, 'csrfToken'>, header: unknown): boolean {
  if (typeof header !== 'string' || !header) return false;
  const a = crypto.createHash('sha256').update(header).digest();
  const b = crypto.createHash('sha256').update(session.csrfToken).digest();
  return crypto.timingSafeEqual(a, b);
}

/** How long an address an account logged in from counts as known. */
export const KNOWN_ADDRESS_MS = 90 * 86_400_000;

/** Remembers that the account logged in from `address` (an addressKey: IPv4, or an IPv6 /64). */
export async function rememberLoginAddress(
  db: Knex,
  accountId: number,
  address: string,
  now = Date.now(),
): Promise<void> {
  await db('login_addresses')
    .insert({ account_id: accountId, address, last_at: now })
    .onConflict(['account_id', 'address'])
    .merge({ last_at: now });
}

/** Whether the account with this email logged in from `address` within KNOWN_ADDRESS_MS. */
export async function knownLoginAddress(db: Knex, email: string, address: string, now = Date.now()): Promise<boolean> {
  const row = await db('login_addresses as l')
    .join('accounts as a', 'a.id', 'l.account_id')
    .where('a.email', email.trim().toLowerCase())
    .andWhere('l.address', address)
    .andWhere('l.last_at', '>', now - KNOWN_ADDRESS_MS)
    .first('l.account_id');
  return !!row;
}
