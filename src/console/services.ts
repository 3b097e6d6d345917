/**
 * What the console and admin handlers need beyond the App: card payments (when Stripe is configured), the admin
 * token, and the brute-force limits on log-in and registration (rate-limiter-flexible: in memory, or in Redis when
 * the gateway has REDIS_URL, so every process counts together).
 */
import { isIPv6 } from 'node:net';
import crypto from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ConsoleConfig } from '../config';
import { ApiError } from '../errors';
import { CardPayments, stripeSettingsFromEnv } from '../billing/stripe';

export interface ConsoleServices {
  cards: CardPayments | null;
  /** SHA-256 of ADMIN_TOKEN, or null: the admin API is off. */
  adminTokenHash: Buffer | null;
  limits: ConsoleLimits;
}

export function consoleServices(o: { env: NodeJS.ProcessEnv; config: ConsoleConfig; db: Knex; log: Logger; redis?: Redis | null }): ConsoleServices {
  const stripe = stripeSettingsFromEnv(o.env);
  const token = o.env.ADMIN_TOKEN?.trim();
  if (token && token.length < 16) o.log.warn('ADMIN_TOKEN is shorter than 16 characters; use a long random value');
  return {
    cards: stripe ? new CardPayments(stripe, o.db, o.log) : null,
    adminTokenHash: token ? sha256(token) : null,
    limits: new ConsoleLimits(o.config, o.redis ?? null),
  };
}

const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest();

/** Constant-time check of an `Authorization: Bearer <token>` header against ADMIN_TOKEN. */
export function adminTokenMatches(services: ConsoleServices, authorization: unknown): boolean {
  if (!services.adminTokenHash || typeof authorization !== 'string') return false;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return !!m && crypto.timingSafeEqual(sha256(m[1]), services.adminTokenHash);
}

/**
 * Failed log-ins per email and per client address, and registrations per address. Every attempt takes a point
 * first (so a burst of parallel guesses cannot slip past the count); a successful log-in gives its points back.
 */
export class ConsoleLimits {
  private readonly email: RateLimiterAbstract;
  private readonly address: RateLimiterAbstract;
  private readonly register: RateLimiterAbstract | null;

  constructor(config: ConsoleConfig, redis: Redis | null) {
    // A per-instance prefix in memory; a shared one in Redis so that all processes count together.
    const make = (name: string, points: number, duration: number) => {
      const memory = new RateLimiterMemory({ keyPrefix: `switchyard:console:${name}`, points, duration });
      return redis ? new RateLimiterRedis({ storeClient: redis, keyPrefix: `switchyard:console:${name}`, points, duration, insuranceLimiter: memory }) : memory;
    };
    this.email = make('login-email', config.login_attempts_per_email, config.login_window_s);
    this.address = make('login-address', config.login_attempts_per_address, config.login_window_s);
    this.register = config.registrations_per_address > 0 ? make('register-address', config.registrations_per_address, config.registration_window_s) : null;
  }

  /** Counts a log-in attempt, or throws 429. Call `succeeded()` on the result when the password was right. */
  async loginAttempt(email: string, client: string): Promise<{ succeeded(): Promise<void> }> {
    const e = email.trim().toLowerCase();
    const address = addressKey(client);
    const results = await Promise.allSettled([this.email.consume(e), this.address.consume(address)]);
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (refused) {
      // Give back the point the other limiter took, so one limit does not use up the other.
      if (results[0].status === 'fulfilled') await this.email.reward(e).catch(() => undefined);
      if (results[1].status === 'fulfilled') await this.address.reward(address).catch(() => undefined);
      throw tooMany(refused.reason, 'Too many failed log-in attempts');
    }
    return {
      succeeded: async () => {
        await Promise.all([this.email.delete(e), this.address.reward(address)]).catch(() => undefined);
      },
    };
  }

  /** Counts a registration from this address, or throws 429. */
  async registration(client: string): Promise<void> {
    if (!this.register) return;
    try {
      await this.register.consume(addressKey(client));
    } catch (e) {
      throw tooMany(e, 'Too many registrations from this address');
    }
  }
}

function tooMany(e: unknown, what: string): unknown {
  if (!(e instanceof RateLimiterRes)) return e;
  const seconds = Math.max(1, Math.ceil(e.msBeforeNext / 1000));
  return new ApiError(429, 'rate_limit_error', `${what}; try again in ${seconds}s`, 'rate_limit_exceeded', null, { 'retry-after': String(seconds) });
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
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}
