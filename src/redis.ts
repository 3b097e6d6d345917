/**
 * The Redis connection the processes of one gateway share (REDIS_URL): rate-limit counters, the console's log-in
 * limits, and the channel on which a change to a key or an account reaches every process's key cache. Optional:
 * without it each process counts alone and cached keys expire after a short time instead.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** A Redis client, or null without REDIS_URL. Failures are logged once per outage. */
export async function connectRedis(url: string | undefined, log: Logger): Promise<Redis | null> {
  if (!url) return null;
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    lazyConnect: false,
  });
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
