/**
 * Console passwords: scrypt (Node's crypto) with a random 16-byte salt; the parameters are stored with the hash
 * (`scrypt$N$r$p$salt$hash`, base64url), so they can be raised later without breaking existing logins, and a
 * hash made with older parameters is upgraded at the next successful log-in. Comparison is constant-time.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { SCORED_CHARACTERS, type Strength } from './strength';

export type { Strength };

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

/** The least zxcvbn score accepted: 3, "safely unguessable" against an online attack and a slow hash offline. */
export const MIN_SCORE = 3;
/**
 * zxcvbn-ts with the common-passwords and diceware lists (49k + 7.8k words) and English advice runs in a worker
 * thread (strengthWorker.ts) started at the first password checked and stopped after a minute without one: its
 * lists take about 40 MB, which a gateway should hold only while people are signing up, not for the rest of its
 * life. The estimate is the same; the first check after a quiet minute waits for the lists to load (~0.3 s).
 */
const IDLE_MS = 60_000;

class StrengthWorker {
  private worker: Worker | null = null;
  private next = 1;
  private readonly pending = new Map<number, { resolve: (s: Strength) => void; reject: (e: Error) => void }>();
  private idle: NodeJS.Timeout | null = null;

  check(password: string, inputs: string[]): Promise<Strength> {
    const worker = this.start();
    if (this.idle) clearTimeout(this.idle);
    worker.ref(); // a check under way keeps the process (e.g. the CLI) alive until it is answered
    const id = this.next++;
    return new Promise<Strength>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, password, inputs });
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = spawnWorker('strengthWorker');
    w.on('message', (m: { id: number; strength?: Strength; error?: string }) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.strength) p?.resolve(m.strength);
      else p?.reject(new Error(`password strength: ${m.error}`));
      if (this.pending.size) return;
      w.unref();
      this.idle = setTimeout(() => this.stop(w), IDLE_MS).unref();
    });
    const fail = (e: Error) => {
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
      if (this.worker === w) this.worker = null;
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`password strength worker exited (${code})`)));
    return (this.worker = w);
  }

  private stop(w: Worker): void {
    if (this.worker !== w || this.pending.size) return;
    this.worker = null;
    void w.terminate();
  }
}

let strength: StrengthWorker | undefined;

/** zxcvbn's estimate for `password`, with the account's email (and its parts) counted as known to an attacker. */
export function passwordStrength(password: string, email = ''): Promise<Strength> {
  const address = email.trim().toLowerCase();
  const inputs = [address, ...address.split(/[@.+_-]+/).filter((w) => w.length >= 3), 'switchyard'];
  return (strength ??= new StrengthWorker()).check(password.slice(0, SCORED_CHARACTERS), inputs);
}

/** A worker thread of this folder: the compiled one, or under ts sources (tests, tsx) through tsx's require hook. */
function spawnWorker(name: string): Worker {
  if (__filename.endsWith('.js')) return new Worker(path.join(__dirname, `${name}.js`));
  const ts = path.join(__dirname, `${name}.ts`);
  return new Worker(`require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(ts)});`, {
    eval: true,
  });
}

/** Why a password is too weak, or null: a few plain rules, then zxcvbn's score (its advice in the message). */
export async function passwordProblem(password: string, email: string): Promise<string | null> {
  if (password.length < 10) return 'Password must be at least 10 characters long';
  if (password.length > 200) return 'Password must be at most 200 characters long';
  if (/^\p{L}+$/u.test(password)) return 'Password must not consist of letters only';
  if (/^\d+$/.test(password)) return 'Password must not consist of digits only';
  if (password.trim().toLowerCase() === email.trim().toLowerCase()) return 'Password must not be the email address';
  const s = await passwordStrength(password, email);
  if (s.score >= MIN_SCORE) return null;
  const advice = [s.warning, ...s.suggestions].filter(Boolean).join(' ');
  return `Password is too easy to guess${advice ? `: ${advice}` : ''}`;
}
