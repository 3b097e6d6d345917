/**
 * The console's brute-force limits: failed log-ins per email and per client address, registrations per address
 * (the limiter factory: in memory, or in Redis when the gateway has REDIS_URL, so every process counts together);
 * and the admin token's check.
 */
import { isIPv6 } from 'node:net';
import crypto from 'node:crypto';
import type { Redis } from 'ioredis';
import type { ConsoleConfig } from '../config';
import { makeLimiter, tooMany, type RateLimiterAbstract } from '../limiter';

export const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest();

/** Constant-time check of an `Authorization: Bearer <token>` header against a token's SHA-256 (ADMIN_TOKEN, METRICS_TOKEN). */
export function bearerMatches(tokenHash: Buffer | null, authorization: unknown): boolean {
  if (!tokenHash || typeof authorization !== 'string') return false;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return !!m && crypto.timingSafeEqual(sha256(m[1]), tokenHash);
}

/**
 * Failed log-ins per (email, client address) pair, per address, and per email over a day; registrations per
 * address. The pair limit, not a per-email one, is what stops guessing one account's password without letting a
 * stranger lock its owner out: a stranger's failures count against the stranger's address. The daily per-email limit
 * bounds guessing spread over many addresses — and a stranger can use it up (from one address, at the pair limit,
 * within hours), so it does not apply at an address the account has logged in from before (`known`), and a
 * password reset by mail (which proves the mailbox) starts it afresh. Every attempt takes a point first (so a burst
 * of parallel guesses cannot slip past the count); a successful log-in gives its points back.
 */
export class ConsoleLimits {
  private readonly pair: RateLimiterAbstract;
  private readonly daily: RateLimiterAbstract;
  private readonly address: RateLimiterAbstract;
  private readonly register: RateLimiterAbstract | null;
  private readonly mails: RateLimiterAbstract;
  private readonly strength: RateLimiterAbstract;

  /** `prefix`: whose sign-ins these are (`console`, `operator`): each counts apart, under the same rules. */
  constructor(config: ConsoleConfig, redis: Redis | null, prefix = 'console') {
    const make = (name: string, points: number, duration: number) =>
      makeLimiter(redis, `${prefix}:${name}`, points, duration);
    this.pair = make('login-pair', config.login_attempts_per_email, config.login_window_s);
    this.daily = make('login-email-day', config.login_attempts_per_email_daily, 86_400);
    this.address = make('login-address', config.login_attempts_per_address, config.login_window_s);
    this.mails = make('mail', 3, 3600);
    this.strength = make('strength-address', 120, 60); // a debounced meter asks a few times per password typed
    this.register =
      config.registrations_per_address > 0
        ? make('register-address', config.registrations_per_address, config.registration_window_s)
        : null;
  }

  /**
   * Counts a log-in attempt, or throws 429. `known(address)` says whether the account of this email logged in from
   * that address before: then the daily per-email limit does not refuse it. Call `succeeded()` on the result when
   * the password was right.
   */
  async loginAttempt(
    email: string,
    client: string,
    known: (address: string) => Promise<boolean>,
  ): Promise<{ succeeded(): Promise<void> }> {
    const e = email.trim().toLowerCase();
    const address = addressKey(client);
    const counted: [RateLimiterAbstract, string][] = [
      [this.pair, `${e}|${address}`],
      [this.address, address],
      [this.daily, e],
    ];
    const results = await Promise.allSettled(counted.map(([l, k]) => l.consume(k)));
    if (
      results[2].status === 'rejected' &&
      results[0].status === 'fulfilled' &&
      results[1].status === 'fulfilled' &&
      (await known(address))
    ) {
      results[2] = { status: 'fulfilled', value: results[2].reason }; // the owner, at home: the stranger's guesses elsewhere do not count here
    }
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (refused) {
      // Give back the points the other limiters took, so one limit does not use up the others.
      await Promise.all(
        counted.map(([l, k], i) =>
          results[i].status === 'fulfilled' ? l.reward(k).catch(() => undefined) : undefined,
        ),
      );
      throw tooMany(refused.reason, (s) => `Too many failed log-in attempts; try again in ${s}s`);
    }
    return {
      succeeded: async () => {
        await Promise.all([
          this.pair.delete(`${e}|${address}`),
          this.address.reward(address),
          this.daily.reward(e),
        ]).catch(() => undefined);
      },
    };
  }

  /** The address proved it reads the mailbox (a password reset): failed log-ins of this email start afresh. */
  async mailboxProved(email: string): Promise<void> {
    await this.daily.delete(email.trim().toLowerCase()).catch(() => undefined);
  }

  /** Counts a mail sent for `subject` (a resent confirmation link, a password reset): at most 3 an hour, or 429. */
  async mail(subject: string): Promise<void> {
    try {
      await this.mails.consume(subject);
    } catch (e) {
      throw tooMany(e, (s) => `Too many messages sent; try again in ${s}s`);
    }
  }

  /** Counts a password-strength check from this address, or throws 429. */
  async strengthCheck(client: string): Promise<void> {
    try {
      await this.strength.consume(addressKey(client));
    } catch (e) {
      throw tooMany(e, (s) => `Too many password checks; try again in ${s}s`);
    }
  }

  /** Counts a registration from this address, or throws 429. */
  async registration(client: string): Promise<void> {
    if (!this.register) return;
    try {
      await this.register.consume(addressKey(client));
    } catch (e) {
      throw tooMany(e, (s) => `Too many registrations from this address; try again in ${s}s`);
    }
  }
}

/**
 * The key a client address is limited under: an IPv4 address as it is, an IPv6 address by its /64 network (one
 * subscriber usually holds a whole /64, so counting single IPv6 addresses would limit nothing).
 */
export function addressKey(address: string): string {
  const plain = address.replace(/%.*$/, ''); // a zone id (fe80::1%eth0)
  if (!isIPv6(plain)) return plain;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(plain);
  if (mapped) return mapped[1];
  const [head, tail] = plain.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
