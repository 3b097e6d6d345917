/**
 * Per-key rate limits: requests per minute and tokens per minute (rate-limiter-flexible). With REDIS_URL the
 * counters live in Redis and are shared by every gateway process; if Redis goes away, each process keeps serving
 * with its own in-memory counters (the library's insurance limiter) and says so in the log.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { LimitsConfig } from '../config';
import type { ApiKey } from '../accounts/keys';
import { ApiError } from '../errors';

const WINDOW_S = 60;

export interface LimitGrant {
  /** The x-ratelimit-* headers for the response. */
  headers: Record<string, string>;
  /** Gives back tokens the request reserved but did not use. */
  refund(tokens: number): void;
}

export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(
    private readonly defaults: LimitsConfig,
    private readonly redis: Redis | null,
    private readonly log: Logger,
  ) {}

  /** Counts one request and `tokens` tokens against the key's limits, or throws a 429 rate_limit_exceeded. */
  async admit(key: ApiKey, tokens: number): Promise<LimitGrant> {
    const rpm = key.rpm_limit ?? this.defaults.rpm;
    const tpm = key.tpm_limit ?? this.defaults.tpm;
    const id = `${key.id}:${key.prefix}`; // the prefix keeps keys of different databases apart in a shared Redis
    const headers: Record<string, string> = {};
    let requests: RateLimiterRes | null = null;
    if (rpm > 0) {
      try {
        requests = await this.limiter('rpm', rpm).consume(id, 1);
      } catch (e) {
        throw this.exceeded(e, 'requests', rpm, 1, headers);
      }
      setHeaders(headers, 'requests', rpm, requests);
    }
    if (tpm > 0) {
      const points = Math.max(1, Math.ceil(tokens));
      try {
        setHeaders(headers, 'tokens', tpm, await this.limiter('tpm', tpm).consume(id, points));
      } catch (e) {
        if (requests) void this.limiter('rpm', rpm).reward(id, 1).catch(() => undefined);
        throw this.exceeded(e, 'tokens', tpm, points, headers);
      }
    }
    return {
      headers,
      refund: (unused) => {
        const n = Math.floor(unused);
        if (tpm > 0 && n > 0) void this.limiter('tpm', tpm).reward(id, n).catch(() => undefined);
      },
    };
  }

  private exceeded(e: unknown, what: 'requests' | 'tokens', limit: number, requested: number, headers: Record<string, string>): ApiError {
    if (!(e instanceof RateLimiterRes)) throw e;
    setHeaders(headers, what, limit, e);
    const seconds = Math.max(1, Math.ceil(e.msBeforeNext / 1000));
    const message =
      requested > limit
        ? `Request too large for ${what} per minute: limit ${limit}, requested ${requested}`
        : `Rate limit reached for ${what} per minute: limit ${limit}. Please try again in ${seconds}s.`;
    return new ApiError(429, 'rate_limit_error', message, 'rate_limit_exceeded', null, { ...headers, 'retry-after': String(seconds) });
  }

  private limiter(kind: 'rpm' | 'tpm', points: number): RateLimiterAbstract {
    const name = `${kind}:${points}`;
    let limiter = this.limiters.get(name);
    if (!limiter) {
      const memory = new RateLimiterMemory({ keyPrefix: `switchyard:${name}`, points, duration: WINDOW_S });
      limiter = this.redis
        ? new RateLimiterRedis({ storeClient: this.redis, keyPrefix: `switchyard:${name}`, points, duration: WINDOW_S, insuranceLimiter: memory })
        : memory;
      this.limiters.set(name, limiter);
    }
    return limiter;
  }
}

function setHeaders(headers: Record<string, string>, what: 'requests' | 'tokens', limit: number, res: RateLimiterRes): void {
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

/** A Redis client for the limits, or null without REDIS_URL. Failures are logged once per outage. */
export async function connectRedis(url: string | undefined, log: Logger): Promise<Redis | null> {
  if (!url) return null;
  const { Redis } = await import('ioredis');
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: false });
  let down = false;
  client.on('error', (e) => {
    if (!down) log.warn({ err: e.message }, 'redis unavailable: rate limits fall back to per-process counters');
    down = true;
  });
  client.on('ready', () => {
    if (down) log.info('redis is back: rate limits are shared again');
    down = false;
  });
  return client;
}
