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

/** How hard a password is to guess: zxcvbn's score (0–4) and its advice. */
export interface Strength {
  score: number;
  warning: string | null;
  suggestions: string[];
}

/** The least zxcvbn score accepted: 3, "safely unguessable" against an online attack and a slow hash offline. */
export const MIN_SCORE = 3;
/**
 * Only this many characters are scored. zxcvbn's matchers grow faster than linearly with length (a 64-character
 * keyboard walk took 100 ms of CPU here, 32 characters at most 45 ms), and a password past 32 characters that is not
 * weak in its first 32 is not one an attacker guesses.
 */
const SCORED_CHARACTERS = 32;

let estimator: { check: (password: string, userInputs: string[]) => Strength } | undefined;

/**
 * zxcvbn-ts with the common-passwords and diceware lists (49k + 7.8k words) and English advice, loaded at the first
 * password checked rather than at start-up: the lists take about 40 MB, which a gateway that never sees a sign-up
 * should not hold.
 */
function zxcvbn() {
  if (!estimator) {
    const { ZxcvbnFactory } = require('@zxcvbn-ts/core') as typeof import('@zxcvbn-ts/core');
    const common = require('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
    const en = require('@zxcvbn-ts/language-en') as typeof import('@zxcvbn-ts/language-en');
    const factory = new ZxcvbnFactory({
      translations: en.translations,
      graphs: common.adjacencyGraphs,
      dictionary: { ...common.dictionary },
      maxLength: SCORED_CHARACTERS,
      l33tMaxSubstitutions: 8,
    });
    estimator = {
      check: (password, userInputs) => {
        const r = factory.check(password, userInputs);
        return { score: r.score, warning: r.feedback.warning, suggestions: r.feedback.suggestions };
      },
    };
  }
  return estimator;
}

/** zxcvbn's estimate for `password`, with the account's email (and its parts) counted as known to an attacker. */
export function passwordStrength(password: string, email = ''): Strength {
  const address = email.trim().toLowerCase();
  const inputs = [address, ...address.split(/[@.+_-]+/).filter((w) => w.length >= 3), 'switchyard'];
  return zxcvbn().check(password.slice(0, SCORED_CHARACTERS), inputs);
}

/** Why a password is too weak, or null: a few plain rules, then zxcvbn's score (its advice in the message). */
export function passwordProblem(password: string, email: string): string | null {
  if (password.length < 10) return 'Password must be at least 10 characters long';
  if (password.length > 200) return 'Password must be at most 200 characters long';
  if (/^\p{L}+$/u.test(password)) return 'Password must not consist of letters only';
  if (/^\d+$/.test(password)) return 'Password must not consist of digits only';
  if (password.trim().toLowerCase() === email.trim().toLowerCase()) return 'Password must not be the email address';
  const s = passwordStrength(password, email);
  if (s.score >= MIN_SCORE) return null;
  const advice = [s.warning, ...s.suggestions].filter(Boolean).join(' ');
  return `Password is too easy to guess${advice ? `: ${advice}` : ''}`;
}
