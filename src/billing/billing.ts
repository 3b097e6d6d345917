/**
 * Admission and settlement of paid requests.
 *
 * admit: count the request against the key's rate limits, then hold its worst-case cost — prompt tokens (counted
 *   with the tokenizer) × input price + output allowance × output price — in ONE transaction of conditional
 *   UPDATEs: the account's available balance (balance − held) and the key's remaining quota (quota − used − held)
 *   must both cover it. When they cover less than the allowance, the allowance is lowered to what they cover (if at
 *   least `min_output_tokens`); otherwise 429 Insufficient quota.
 * settle: charge the exact cost of the usage (rounded up once, see prices.ts), release the rest of the hold, write
 *   the ledger row and the usage record — in one transaction that starts by deleting the hold, so a request is
 *   charged at most once whoever settles it.
 * Holds are leases: the process renews the ones in flight (recording what a stream has certainly cost so far);
 * a process that dies stops renewing, and the sweeper (any process, at start-up and periodically) settles its
 * expired holds at that recorded cost.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { BillingConfig, ModelConfig } from '../config';
import { transact } from '../db';
import { ApiError } from '../errors';
import type { KeyPrincipal } from '../accounts/keys';
import type { Meter } from '../gateway/gateway';
import type { Endpoint } from '../gateway/registry';
import type { Usage } from '../gateway/types';
import type { LimitGrant, RateLimits } from './limits';
import { affordableOutput, costMicros } from './prices';

export const insufficientQuota = () =>
  new ApiError(429, 'insufficient_quota', 'Insufficient quota', 'insufficient_quota', null, { 'x-should-retry': 'false' });

export interface AdmitRequest {
  requestId: string;
  principal: KeyPrincipal;
  model: ModelConfig;
  endpoint: Endpoint;
  promptTokens: number;
  /** Output tokens the request may generate (its own limit, or the model's default); 0 for embeddings. */
  outputTokens: number;
}

/** How a request ended, for its settlement. */
export interface Outcome {
  /** HTTP status of the answer (for a stream that broke off: the status of the error event). */
  status: number;
  /** What the upstream used; null when no upstream answered. */
  meter: Meter | null;
  ttfbMs?: number | null;
}

export interface Admission {
  /** The output allowance to send upstream: the request's own, or lower when the balance covers less. */
  outputTokens: number;
  lowered: boolean;
  /** x-ratelimit-* headers for the response. */
  headers: Record<string, string>;
  /** Registers where to read the usage of a stream in progress (for the lease's checkpoints). */
  track(progress: () => Usage | null): void;
  settle(outcome: Outcome): Promise<void>;
}

interface HoldRow {
  request_id: string;
  endpoint: string;
  account_id: number;
  key_id: number;
  model: string;
  amount_micros: number;
  progress_micros: number;
  prompt_tokens: number;
  completion_tokens: number;
}

interface Live {
  hold: HoldRow;
  /** When the request was admitted: its usage record's latency runs from here. */
  startedAt: number;
  price: ModelConfig['price'];
  progress?: () => Usage | null;
}

class NotCovered extends Error {}

export class Billing {
  private readonly live = new Map<string, Live>();
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly db: Knex,
    private readonly config: BillingConfig,
    private readonly limits: RateLimits,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Settles what dead processes left behind, now and every sweep interval, and renews this process's leases. */
  start(): void {
    void this.sweep();
    this.timers.push(setInterval(() => void this.sweep(), this.config.sweep_interval_ms).unref());
    this.timers.push(setInterval(() => void this.renew(), Math.max(50, Math.floor(this.config.hold_ttl_ms / 3))).unref());
  }

  stop(): void {
    this.timers.forEach(clearInterval);
    this.timers = [];
  }

  async admit(r: AdmitRequest): Promise<Admission> {
    const grant = await this.limits.admit(r.principal.key, r.promptTokens + r.outputTokens);
    let held: { hold: HoldRow; outputTokens: number };
    try {
      held = await this.hold(r);
    } catch (e) {
      grant.refund(r.promptTokens + r.outputTokens);
      if (e instanceof ApiError) Object.assign(e.headers, grant.headers);
      throw e;
    }
    const live: Live = { hold: held.hold, price: r.model.price, startedAt: this.now() };
    this.live.set(r.requestId, live);
    return {
      outputTokens: held.outputTokens,
      lowered: held.outputTokens < r.outputTokens,
      headers: grant.headers,
      track: (progress) => {
        live.progress = progress;
      },
      settle: (outcome) => this.settleLive(live, outcome, grant, r.promptTokens + r.outputTokens),
    };
  }

  /** Holds the worst case; if the money covers less, a lower output allowance (never below the minimum). */
  private async hold(r: AdmitRequest): Promise<{ hold: HoldRow; outputTokens: number }> {
    const full = costMicros(r.model.price, r.promptTokens, r.outputTokens);
    const hold = await this.tryHold(r, full);
    if (hold) return { hold, outputTokens: r.outputTokens };
    if (r.outputTokens === 0) throw insufficientQuota();
    const fits = affordableOutput(r.model.price, r.promptTokens, await this.available(r.principal));
    if (fits === null || fits < this.config.min_output_tokens) throw insufficientQuota();
    const lowered = Math.min(fits, r.outputTokens);
    const second = await this.tryHold(r, costMicros(r.model.price, r.promptTokens, lowered));
    if (!second) throw insufficientQuota();
    return { hold: second, outputTokens: lowered };
  }

  private async tryHold(r: AdmitRequest, amount: number): Promise<HoldRow | null> {
    const hold: HoldRow = {
      request_id: r.requestId,
      endpoint: r.endpoint,
      account_id: r.principal.accountId,
      key_id: r.principal.key.id,
      model: r.model.id,
      amount_micros: amount,
      progress_micros: 0,
      prompt_tokens: r.promptTokens,
      completion_tokens: 0,
    };
    try {
      await transact(this.db, async (trx) => {
        const account = await trx('accounts')
          .where('id', hold.account_id)
          .andWhere('status', 'active')
          .andWhereRaw('balance_micros - held_micros >= ?', [amount])
          .increment('held_micros', amount);
        if (account !== 1) throw new NotCovered();
        const key = await trx('api_keys')
          .where('id', hold.key_id)
          .andWhere((q) => q.whereNull('quota_micros').orWhereRaw('quota_micros - used_micros - held_micros >= ?', [amount]))
          .increment('held_micros', amount);
        if (key !== 1) throw new NotCovered();
        await trx('holds').insert({ ...hold, expires_at: this.now() + this.config.hold_ttl_ms, created_at: this.now() });
      });
      return hold;
    } catch (e) {
      if (e instanceof NotCovered) return null;
      throw e;
    }
  }

  /** What the account and the key can still spend, whichever is less. */
  private async available(p: KeyPrincipal): Promise<number> {
    const account = await this.db('accounts').where('id', p.accountId).first('balance_micros', 'held_micros');
    const key = await this.db('api_keys').where('id', p.key.id).first('quota_micros', 'used_micros', 'held_micros');
    let left = Number(account.balance_micros) - Number(account.held_micros);
    if (!key) return 0; // deleted while the request was being admitted
    if (key.quota_micros !== null) left = Math.min(left, Number(key.quota_micros) - Number(key.used_micros) - Number(key.held_micros));
    return Math.max(0, left);
  }

  private async settleLive(live: Live, outcome: Outcome, grant: LimitGrant, reservedTokens: number): Promise<void> {
    this.live.delete(live.hold.request_id);
    const usage = outcome.meter?.usage;
    try {
      grant.refund(reservedTokens - (usage?.total_tokens ?? 0));
      const cost = usage ? costMicros(live.price, usage.prompt_tokens, usage.completion_tokens) : 0;
      await this.finish({ ...live.hold, created_at: live.startedAt }, cost, {
        status: outcome.status,
        provider: outcome.meter?.provider || null,
        promptTokens: usage?.prompt_tokens ?? 0,
        completionTokens: usage?.completion_tokens ?? 0,
        counted: outcome.meter?.counted ?? 'none',
        ttfbMs: outcome.ttfbMs ?? null,
      });
    } catch (e) {
      // The hold stays in the database; the sweeper settles it once its lease expires.
      this.log.error({ reqId: live.hold.request_id, err: (e as Error).message }, 'settlement failed; the sweeper will settle this hold');
    }
  }

  /**
   * Releases a hold and charges `cost` (never more than the account and the key can still pay), writing the
   * ledger row and the usage record. Returns false when somebody else settled the hold first.
   */
  private async finish(
    hold: HoldRow & { created_at?: number },
    cost: number,
    rec: { status: number; provider: string | null; promptTokens: number; completionTokens: number; counted: string; ttfbMs: number | null },
  ): Promise<boolean> {
    return transact(this.db, async (trx) => {
      const gone = await trx('holds').where('request_id', hold.request_id).del();
      if (gone !== 1) return false;
      // The hold's row is gone, so this transaction owns the settlement; lock the account and key rows, work out
      // the charge, and write each row once.
      const amount = Number(hold.amount_micros);
      const account = await trx('accounts').where('id', hold.account_id).forUpdate().first('balance_micros', 'held_micros');
      // The key may have been deleted while the request ran (console): the account still pays, no quota applies.
      const key = await trx('api_keys').where('id', hold.key_id).forUpdate().first('quota_micros', 'used_micros', 'held_micros');
      const balance = Number(account.balance_micros);
      let charge = Math.min(cost, Math.max(0, balance - (Number(account.held_micros) - amount)));
      if (key && key.quota_micros !== null) {
        charge = Math.min(charge, Math.max(0, Number(key.quota_micros) - Number(key.used_micros) - (Number(key.held_micros) - amount)));
      }
      await trx('accounts')
        .where('id', hold.account_id)
        .update({ held_micros: trx.raw('held_micros - ?', [amount]), balance_micros: trx.raw('balance_micros - ?', [charge]) });
      if (key) {
        await trx('api_keys')
          .where('id', hold.key_id)
          .update({ held_micros: trx.raw('held_micros - ?', [amount]), used_micros: trx.raw('used_micros + ?', [charge]) });
      }
      if (charge > 0) {
        await trx('ledger').insert({
          account_id: hold.account_id,
          kind: 'usage',
          amount_micros: -charge,
          balance_after: balance - charge,
          ref: hold.request_id,
          key_id: hold.key_id,
          model: hold.model,
          prompt_tokens: rec.promptTokens,
          completion_tokens: rec.completionTokens,
          note: charge < cost ? `cost ${cost} capped at what the account could pay` : null,
          created_at: this.now(),
        });
      }
      const now = this.now();
      await trx('usage_records').insert({
        request_id: hold.request_id,
        account_id: hold.account_id,
        key_id: hold.key_id,
        model: hold.model,
        provider: rec.provider,
        endpoint: hold.endpoint,
        status: rec.status,
        prompt_tokens: rec.promptTokens,
        completion_tokens: rec.completionTokens,
        counted: rec.counted,
        cost_micros: charge,
        latency_ms: hold.created_at ? now - hold.created_at : null,
        ttfb_ms: rec.ttfbMs,
        created_at: now,
      });
      return true;
    });
  }

  /** Renews the leases of this process's holds and records what each stream has certainly cost so far. */
  async renew(): Promise<void> {
    const expires = this.now() + this.config.hold_ttl_ms;
    for (const live of [...this.live.values()]) {
      try {
        const usage = live.progress?.() ?? null;
        const progress = usage ? Math.min(live.hold.amount_micros, costMicros(live.price, usage.prompt_tokens, usage.completion_tokens)) : 0;
        await this.db('holds').where('request_id', live.hold.request_id).update({
          expires_at: expires,
          progress_micros: progress,
          completion_tokens: usage?.completion_tokens ?? 0,
          prompt_tokens: usage?.prompt_tokens ?? live.hold.prompt_tokens,
        });
      } catch (e) {
        this.log.warn({ reqId: live.hold.request_id, err: (e as Error).message }, 'could not renew a hold');
      }
    }
  }

  /**
   * Settles holds whose lease expired (their process died): charges what was recorded as certainly spent,
   * releases the rest. Safe in several processes at once: each hold is settled by whoever deletes it first.
   */
  async sweep(): Promise<number> {
    let settled = 0;
    try {
      const expired = (await this.db('holds').where('expires_at', '<', this.now()).orderBy('id').limit(500)) as (HoldRow & { created_at: number })[];
      for (const h of expired) {
        const charged = await this.finish({ ...h, created_at: undefined }, Math.min(Number(h.progress_micros), Number(h.amount_micros)), {
          status: 500,
          provider: null,
          promptTokens: Number(h.progress_micros) > 0 ? Number(h.prompt_tokens) : 0,
          completionTokens: Number(h.completion_tokens),
          counted: 'checkpoint',
          ttfbMs: null,
        });
        if (charged) settled++;
      }
      if (settled) this.log.warn({ settled }, 'settled holds left by a process that stopped');
    } catch (e) {
      this.log.error({ err: (e as Error).message }, 'hold sweep failed');
    }
    return settled;
  }
}
