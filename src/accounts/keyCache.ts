/**
 * API keys in memory, so that a request with a valid key makes no database round trip. An entry lives for a short
 * time (2 s) — long enough to take the database off the hot path, short enough that a key disabled, deleted or
 * limited anywhere is refused everywhere within 2 s. With Redis, a change is also announced on a channel and every
 * process drops the entry at once (then entries may live longer, 30 s, while the channel is up). The process that
 * makes a change drops its own entry at once either way. Unknown keys are looked up every time (they are few and
 * the lookup is one indexed read), and the map is bounded.
 */
import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { bearerKey, hashKey, isRefusal, keyLive, principalByHash, type KeyLookup, type KeyPrincipal } from './keys';

export const CHANNEL = 'switchyard:key-changes';
const SHORT_TTL_MS = 2_000;
const LONG_TTL_MS = 30_000;
const MAX_ENTRIES = 50_000;

/** What changed: one key, or every key of an account. */
export type KeyChange = { keyId: number } | { accountId: number };

export class KeyCache {
  private readonly entries = new Map<string, { principal: KeyPrincipal; until: number }>();
  private subscribed = false;
  private readonly listeners: ((change: KeyChange) => void)[] = [];

  constructor(
    private readonly db: Knex,
    private readonly redis: Redis | null = null,
    private readonly log?: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Listens for changes announced by other processes (needs its own Redis connection). */
  async listen(): Promise<void> {
    if (!this.redis) return;
    const sub = this.redis.duplicate();
    sub.on('message', (_channel: string, message: string) => {
      try {
        this.drop(JSON.parse(message) as KeyChange);
      } catch {
        // not ours
      }
    });
    sub.on(
      'ready',
      () =>
        void sub
          .subscribe(CHANNEL)
          .then(() => (this.subscribed = true))
          .catch(() => (this.subscribed = false)),
    );
    sub.on('error', () => (this.subscribed = false));
    sub.on('end', () => (this.subscribed = false));
    this.closers.push(() => sub.disconnect());
  }

  private readonly closers: (() => void)[] = [];

  close(): void {
    this.closers.splice(0).forEach((c) => c());
  }

  /**
   * The principal of an Authorization header; why a real key is refused (disabled, expired); or null (missing,
   * malformed, unknown, or its account is not active).
   */
  async authenticate(authorization: string | undefined): Promise<KeyLookup> {
    const key = bearerKey(authorization);
    if (!key) return null;
    const hash = hashKey(key); // entries are found by the key's hash: no secret is kept in memory
    const hit = this.entries.get(hash);
    const now = this.now();
    // expiry is checked on every request
    if (hit && hit.until > now) {
      const { key, accountId } = hit.principal;
      return keyLive(key, now) ? hit.principal : { refused: 'key_expired', keyId: key.id, accountId };
    }
    const principal = await principalByHash(this.db, hash, now);
    if (!principal || isRefusal(principal)) {
      this.entries.delete(hash);
      return principal;
    }
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(hash, { principal, until: now + (this.subscribed ? LONG_TTL_MS : SHORT_TTL_MS) });
    return principal;
  }

  /** A key or account changed here: drop it now, and tell the other processes. */
  changed(change: KeyChange): void {
    this.drop(change);
    if (this.redis)
      void this.redis
        .publish(CHANNEL, JSON.stringify(change))
        .catch((e) => this.log?.warn({ err: (e as Error).message }, 'could not announce a key change'));
  }

  /** Also tells `listener` of every change, made here or announced by another process. */
  onChange(listener: (change: KeyChange) => void): void {
    this.listeners.push(listener);
  }

  private drop(change: KeyChange): void {
    for (const l of this.listeners) l(change);
    for (const [k, e] of this.entries) {
      if ('keyId' in change ? e.principal.key.id === change.keyId : e.principal.accountId === change.accountId)
        this.entries.delete(k);
    }
  }
}
