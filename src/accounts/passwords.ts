/**
 * Console passwords: scrypt (Node's crypto) with a random 16-byte salt; the parameters are stored with the hash
 * (`scrypt$N$r$p$salt$hash`, base64url), so they can be raised later without breaking existing logins, and a
 * hash made with older parameters is upgraded at the next successful log-in. Comparison is constant-time.
 */
import crypto from 'node:crypto';

const PARAMS = { N: 2 ** 15, r: 8, p: 1 }; // 32 MiB per hash; about 0.1 s on one core
const KEY_LEN = 32;

function scrypt(password: string, salt: Buffer, p: { N: number; r: number; p: number }): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    crypto.scrypt(
      password.normalize('NFKC'),
      salt,
      KEY_LEN,
      { ...p, maxmem: 256 * p.N * p.r + 1024 * 1024 },
      (e, key) => (e ? reject(e) : resolve(key)),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  const key = await scrypt(password, salt, PARAMS);
  return `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** A hash of a random password: verified against when the email is unknown, so timing does not reveal accounts. */
let decoy: Promise<string> | undefined;

/**
 * Checks a password against a stored hash (or against a decoy when there is none, taking the same time).
 * `stale` says the hash was made with other parameters than today's and should be replaced.
 */
export async function verifyPassword(
  password: string,
  stored: string | null,
): Promise<{ ok: boolean; stale: boolean }> {
  const hash = stored ?? (await (decoy ??= hashPassword(crypto.randomBytes(16).toString('hex'))));
  const m = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(hash);
  if (!m) return { ok: false, stale: false };
  const params = { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  const expected = Buffer.from(m[5], 'base64url');
  const key = await scrypt(password, Buffer.from(m[4], 'base64url'), params);
  const ok = stored !== null && key.length === expected.length && crypto.timingSafeEqual(key, expected);
  return { ok, stale: ok && (params.N !== PARAMS.N || params.r !== PARAMS.r || params.p !== PARAMS.p) };
}

/** Why a password is too weak, or null. */
export function passwordProblem(password: string, email: string): string | null {
  if (password.length < 10) return 'Password must be at least 10 characters long';
  if (password.length > 200) return 'Password must be at most 200 characters long';
  if (/^\p{L}+$/u.test(password)) return 'Password must not consist of letters only';
  if (/^\d+$/.test(password)) return 'Password must not consist of digits only';
  if (password.trim().toLowerCase() === email.trim().toLowerCase()) return 'Password must not be the email address';
  return null;
}
