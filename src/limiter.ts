/**
 * The one way the gateway makes a rate limiter (rate-limiter-flexible): in Redis when it has one, so that every
 * process counts together, with an in-memory limiter as the insurance that takes over while Redis is away; in
 * memory otherwise. Used for the per-key request and token limits and the console's log-in limits.
 */
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { ApiError } from './errors';

export { RateLimiterRes, type RateLimiterAbstract };

export function makeLimiter(redis: Redis | null, name: string, points: number, durationS: number): RateLimiterAbstract {
  const keyPrefix = `switchyard:${name}`;
  const memory = new RateLimiterMemory({ keyPrefix, points, duration: durationS });
  return redis
    ? new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration: durationS, insuranceLimiter: memory })
    : memory;
}

/** A 429 rate_limit_exceeded for a refusal of the limiter (anything else is rethrown), with retry-after. */
export function tooMany(
  e: unknown,
  message: (seconds: number) => string,
  headers: Record<string, string> = {},
): ApiError {
  if (!(e instanceof RateLimiterRes)) throw e;
  const seconds = Math.max(1, Math.ceil(e.msBeforeNext / 1000));
  return new ApiError(429, 'rate_limit_error', message(seconds), 'rate_limit_exceeded', null, {
    ...headers,
    'retry-after': String(seconds),
  });
}
