/**
 * Secrets at rest: AES-256-GCM (node:crypto) under SWITCHYARD_SECRET_KEY. A sealed value is
 * `sy1:<base64url of IV (12 random bytes) | tag (16) | ciphertext>`: the version prefix lets a later format (or
 * cipher) be read next to this one, and tells a sealed value from a plain one. GCM's tag makes a wrong key (or a
 * changed value) fail to open rather than give garbage.
 */
import crypto from 'node:crypto';

const PREFIX = 'sy1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A key that is missing or malformed, or a value that does not open under it; the message is one line for operators. */
export class SecretKeyError extends Error {
  override name = 'SecretKeyError';
}

const FORMAT = '32 random bytes as base64 (44 characters) or hex (64 characters), e.g. from: openssl rand -base64 32';

/** The key in `value` (an environment variable named `name`), or null when it is not set. */
export function secretKey(value: string | undefined, name = 'SWITCHYARD_SECRET_KEY'): Buffer | null {
  const v = value?.trim();
  if (!v) return null;
  const key = /^[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v, 'base64');
  // Buffer.from(…, 'base64') skips what is not base64: a key that does not round-trip is not one.
  const exact = /^[0-9a-fA-F]{64}$/.test(v) || key.toString('base64').replace(/=+$/, '') === v.replace(/=+$/, '');
  if (key.length !== 32 || !exact) throw new SecretKeyError(`${name} must be ${FORMAT}`);
  return key;
}

export const isSealed = (v: unknown): v is string => typeof v === 'string' && v.startsWith(PREFIX);

export function encrypt(plain: string, key: Buffer): string {
  const iv = crypto.randomBytes(IV_BYTES);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

export function decrypt(sealed: string, key: Buffer): string {
  if (!isSealed(sealed)) throw new SecretKeyError('not a sealed secret (no sy1: prefix)');
  const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64url');
  try {
    const decipher = crypto.createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretKeyError('a stored secret cannot be decrypted with SWITCHYARD_SECRET_KEY (a different key?)');
  }
}

/** What may be shown of a secret: its last 4 characters (all of a shorter one would be too much: then none). */
export const last4 = (plain: string): string => (plain.length > 8 ? `…${plain.slice(-4)}` : '…');
