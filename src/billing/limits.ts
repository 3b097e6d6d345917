/**
 * Per-key rate limits: requests per minute (counted as soon as the key is known, before the body is read) and
 * tokens per minute (the prompt's estimate plus the output allowance, once the body is read; what a request did
 * not use is given back when it ends). Counters live in Redis when the gateway has one (shared by every process;
 * if Redis goes away each process keeps serving with its own counters), in memory otherwise.
 */
import type { Redis } from 'ioredis';
import type { LimitsConfig } from '../config';
import type { ApiKey } from '../accounts/keys';
import { makeLimiter, RateLimiterRes, tooMany, type RateLimiterAbstract } from '../limiter';

const WINDOW_S = 60;

export interface LimitGrant {
  /** The x-ratelimit-* headers for the response (completed by the token limit). */
  headers: Record<string, string>;
  /** Counts the request's tokens, or throws a 429 (giving the request back). */
  tokens(n: number): Promise<void>;
  /** Gives back tokens the request reserved but did not use. */
  refund(tokens: number): void;
}

/** The grant of a key without limits: one shared object (its headers stay empty: nothing writes to them). */
const UNLIMITED: LimitGrant = Object.freeze({
  headers: Object.freeze({}) as Record<string, string>,
  tokens: async () => undefined,
  refund: () => undefined,
});

export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(
    private readonly defaults: LimitsConfig,
    private readonly redis: Redis | null,
  ) {}

  /** Counts one request against the key's requests per minute, or throws a 429 rate_limit_exceeded. */
  async request(key: ApiKey): Promise<LimitGrant> {
    const rpm = key.rpm_limit ?? this.defaults.rpm;
    const tpm = key.tpm_limit ?? this.defaults.tpm;
    if (rpm <= 0 && tpm <= 0) return UNLIMITED; // nothing to count, no headers to send
    const id = `${key.id}:${key.prefix}`; // the prefix keeps keys of different databases apart in a shared Redis
    const headers: Record<string, string> = {};
    if (rpm > 0) {
      try {
        setHeaders(headers, 'requests', rpm, await this.limiter('rpm', rpm).consume(id, 1));
      } catch (e) {
        throw exceeded(e, 'requests', rpm, 1, headers);
      }
    }
    let counted = 0;
    return {
      headers,
      tokens: async (n) => {
        if (tpm <= 0) return;
        const points = Math.max(1, Math.ceil(n));
        const limiter = this.limiter('tpm', tpm);
        try {
          // A request larger than the whole limit never fits: refused without touching the counter.
          if (points > tpm) throw (await limiter.get(id)) ?? new RateLimiterRes(tpm, 0, 0);
          setHeaders(headers, 'tokens', tpm, await limiter.consume(id, points));
          counted = points;
        } catch (e) {
          // A refused request spends nothing: the limiter counted its points before it refused them.
          if (e instanceof RateLimiterRes && points <= tpm) void limiter.reward(id, points).catch(() => undefined);
          if (rpm > 0)
            void this.limiter('rpm', rpm)
              .reward(id, 1)
              .catch(() => undefined);
          throw exceeded(e, 'tokens', tpm, points, headers);
        }
      },
      refund: (unused) => {
        const n = Math.min(counted, Math.floor(unused));
        if (n > 0)
          void this.limiter('tpm', tpm)
            .reward(id, n)
            .catch(() => undefined);
      },
    };
  }

  private limiter(kind: 'rpm' | 'tpm', points: number): RateLimiterAbstract {
    const name = `${kind}:${points}`;
    let limiter = this.limiters.get(name);
    if (!limiter) this.limiters.set(name, (limiter = makeLimiter(this.redis, name, points, WINDOW_S)));
    return limiter;
  }
}

function exceeded(
  e: unknown,
  what: 'requests' | 'tokens',
  limit: number,
  requested: number,
  headers: Record<string, string>,
) {
  if (e && typeof e === 'object' && 'msBeforeNext' in e) setHeaders(headers, what, limit, e as RateLimiterRes);
  return tooMany(
    e,
    (seconds) =>
      requested > limit
        ? `Request too large for ${what} per minute: limit ${limit}, requested ${requested}`
        : `Rate limit reached for ${what} per minute: limit ${limit}. Please try again in ${seconds}s.`,
    headers,
  );
}

function setHeaders(
  headers: Record<string, string>,
  what: 'requests' | 'tokens',
  limit: number,
  res: RateLimiterRes,
): void {
  headers[`x-ratelimit-limit-${what}`] = String(limit);
  headers[`x-ratelimit-remaining-${what}`] = String(Math.max(0, res.remainingPoints));
  headers[`x-ratelimit-reset-${what}`] = goDuration(res.msBeforeNext);
}

/** 1500 → "1.5s", 360000 → "6m0s", 12 → "12ms": the duration format OpenAI's headers use. */
export function goDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  if (total < 1000) return `${total}ms`;
  const minutes = Math.floor(total / 60_000);
  const seconds = (total % 60_000) / 1000;
  const s = `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, '')}s`;
  return minutes ? `${minutes}m${s}` : s;
}
