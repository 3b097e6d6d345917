/**
 * Admission and settlement of paid requests, with the database off the hot path.
 *
 * Leases. A process reserves a slice of a key's money (account and key, in one conditional UPDATE each) and admits
 *   that key's requests against it in memory: a request holds its worst case (prices.ts) out of the slice, and
 *   gives back what it did not spend when it ends. The slice is topped up in the background as it runs low, and
 *   goes back to the account when idle or at shutdown. A slice is an eighth of the money available (at most
 *   `lease_usd`), and only worth having when it pays for at least 16 worst cases: below that — little money, or a
 *   large request — the request takes today's per-request hold, one transaction before the upstream call.
 * Write-behind. Settled requests are written in batches (one transaction at most every `flush_ms`, or as soon as
 *   `flush_rows` wait): the charge comes out of the lease and the balance, the ledger rows and usage records go in.
 * Crashes. Every third of `hold_ttl_ms` the process renews its leases and holds and records, for each request in
 *   flight, what it has certainly cost so far (a checkpoint). A process killed with -9 stops renewing; the sweeper
 *   (any process) settles its expired leases and holds: checkpoints are charged, the rest goes back. What it may
 *   leave unbilled is at most the requests it had answered since its last flush (≤ flush_ms of traffic).
 * Invariants: no account or key is ever overdrawn (a charge never exceeds what was reserved for it: a hold covers
 *   the bill, and beyond it only what is free); a request is charged once (a lease's requests are charged by its
 *   flush, or — if the process died — by the sweeper through their checkpoints, never both); what an upstream
 *   bills beyond what the account can pay is written as a `shortfall` ledger row and logged, never silently lost.
 */
import { formatUsd } from '../money';
import crypto from 'node:crypto';
import os from 'node:os';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { KeyPrincipal } from '../accounts/keys';
import type { BillingConfig, ModelConfig } from '../config';
import { ApiError } from '../errors';
import { NO_USAGE, familyBounds, usage, type Units, type Usage } from '../usage';
import { fail, type RequestTrace, type Span } from '../tracing';
import { priceOf, type Price } from './prices';
import * as store from './store';

/**
 * The 429 for money that does not cover a request. Its message, type and code are what OpenAI's clients know; the
 * cause (the account's balance, or the key's quota) is the error's `reason`, which SDKs pass through.
 */
export const insufficientQuota = (reason: 'account_balance' | 'key_quota' = 'account_balance') =>
  new ApiError(
    429,
    'insufficient_quota',
    'Insufficient quota',
    'insufficient_quota',
    null,
    { 'x-should-retry': 'false' },
    reason,
  );

/** The key's budget for the period is used up: says which budget, and when it starts afresh. */
export const budgetExhausted = (b: { micros: number; period: string; resetsAt: number }) =>
  new ApiError(
    429,
    'insufficient_quota',
    `Insufficient quota: this key's budget of ${formatUsd(b.micros)} USD per ${b.period} is used up; it resets at ${new Date(b.resetsAt).toISOString()}`,
    'insufficient_quota',
    null,
    { 'x-should-retry': 'false' },
    'key_budget',
  );

export interface AdmitRequest {
  requestId: string;
  /** The request's trace (tracing on): its settlement is a span under it. */
  trace?: RequestTrace;
  principal: KeyPrincipal;
  model: ModelConfig;
  endpoint: string;
  /** Prompt tokens the request cannot exceed (see gateway/bound.ts). */
  promptTokens: number;
  /** Output tokens it may generate, all choices together (its own limit, or the model's default); 0 for embeddings. */
  outputTokens: number;
  /** How many choices share them (n, best_of, prompts): a lowered allowance still gives each at least one token. */
  choices?: number;
  /** Of each choice's share, tokens the upstream generates beyond the limit it is sent (the model's extra_output_tokens). */
  extraPerChoice?: number;
  /**
   * The output is a bound, not a limit the upstream is sent (speech): held whole, never lowered to what the money
   * covers (the request is refused instead).
   */
  fixedOutput?: boolean;
  /**
   * What it uses whatever its answer, counted from the request, by usage field (a speech input's characters, a
   * moderation request, search units): held exactly, at their price.
   */
  units?: Units;
  /** UTF-8 bytes of its prompt text, for checkpoint estimates. */
  promptBytes: number;
  /** Bounds of the families other than prompt and output, by class name (generated images: `{ images: n }`). */
  others?: Readonly<Record<string, number>>;
  /** The grades the request allows (an image's size and quality): a graded class is held at the dearest of them. */
  grades?: readonly string[];
  /**
   * False: the upstream takes no output limit (an image costs the tokens its size and quality make), so a request the
   * money does not cover is refused rather than sent with a lower allowance.
   */
  lowerable?: boolean;
}

/** What a request used at an upstream (the gateway's Meter), or null when no upstream answered. */
export interface Used {
  provider: string;
  usage: Usage;
  counted: string;
  /** The grade (`<size>/<quality>`) the upstream made its images at, when it or the request says. */
  grade?: string;
}

export interface Outcome {
  /** HTTP status of the answer (for a stream that broke off: the status of the error event). */
  status: number;
  used: Used | null;
  ttfbMs?: number | null;
}

/** What a stream has produced so far, for checkpoints. */
export type Progress = () => { usage: Usage | null; generatedBytes: number };

export interface Admission {
  /** The output allowance to send upstream, all choices together: the request's own, or lower when money is short. */
  outputTokens: number;
  /** What is held for it (micro-USD). */
  held: number;
  /** Registers where to read the progress of a stream (for checkpoints). */
  track(progress: Progress): void;
  /** Charges what the request used. Resolves when the charge is queued (a lease) or written (a hold). */
  settle(outcome: Outcome): Promise<void>;
}

interface Lease {
  id: string;
  accountId: number;
  keyId: number;
  /** Reserved in the database. */
  amount: number;
  /** Held by requests in flight. */
  inFlight: number;
  /** Charged by settled requests whose charge is not written yet (still part of `amount` in the database). */
  unflushed: number;
  lastUsed: number;
  growing: Promise<void> | null;
  dead: boolean;
}

/** A request in flight. */
interface Live {
  requestId: string;
  admitted: AdmitRequest;
  price: Price;
  startedAt: number;
  hold: number;
  /** The output allowance its hold covers (the request's own, or lower when money was short). */
  heldOutput: number;
  lease: Lease | null;
  /** A checkpoint row exists for it. */
  checkpointed: boolean;
  progress?: Progress;
}

/** At shutdown, how long to wait for the requests the server cut to settle. */
const STOP_WAIT_MS = 5_000;

/**
 * How many batches (`flush_rows` each) may wait to be written before a new request waits for the batch being written
 * (see `behind`).
 */
const BACKLOG_BATCHES = 4;

/** A lease must pay for at least this many worst cases of the request that opens it. */
const LEASE_MIN_REQUESTS = 16;
/** A lease is a fraction of the money available: several processes can each lease some without starving the others. */
const LEASE_SHARE = 8;

export class Billing {
  private readonly leases = new Map<string, Lease>();
  /** Leases being opened, by key (account:key); settled, never rejected, when the open ends (see leaseFor). */
  private readonly opening = new Map<string, Promise<void>>();
  private readonly live = new Map<string, Live>();
  /** Settlements waiting to be written, each with the lease its charge comes out of. */
  private queue: { s: store.Settlement; lease: Lease | null }[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  /** The last batch could not be written (the database is down or refusing): it is tried again later. */
  private writeFailed = false;
  private timers: NodeJS.Timeout[] = [];
  private readonly owner = `${os.hostname()}:${process.pid}`;
  private readonly idleWaiters: (() => void)[] = [];
  /** Settlements under way: out of `live`, their hold not yet written. */
  private settling = 0;
  /** Leases of keys or accounts that changed: no longer used, given back once their requests are written. */
  private retiring: Lease[] = [];
  /** Sweeps and renewals under way (stop() waits for them). */
  private readonly running = new Set<Promise<unknown>>();
  /** Settlement spans (tracing on) of settlements queued, by request id: they end once the batch is written. */
  private readonly spans = new Map<string, Span>();
  /** Told of every settled request, with what it cost at the configured prices (metrics). */
  onSettled: ((s: Readonly<store.Settlement>, cost: number) => void) | null = null;

  constructor(
    private readonly db: Knex,
    private readonly config: BillingConfig,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Settles what dead processes left behind, now and every sweep interval, and renews this process's leases. */
  start(): void {
    this.background(this.sweep());
    this.timers.push(setInterval(() => this.background(this.sweep()), this.config.sweep_interval_ms).unref());
    this.timers.push(
      setInterval(() => this.background(this.renew()), Math.max(50, Math.floor(this.config.hold_ttl_ms / 3))).unref(),
    );
  }

  /**
   * At shutdown, once the server has stopped: waits for the requests it cut (a stream still running when the grace
   * period ended settles a moment after the server stopped, when its abort runs), writes everything queued (every
   * batch, not only the first), then gives back each lease that carries nothing unwritten. A lease whose requests
   * could not be written stays, and expires: the sweeper settles it.
   */
  /** Returns what it could not finish: settlements not written, leases kept (the sweeper settles both later). */
  async stop(): Promise<{ unwritten: number; leasesKept: number }> {
    this.timers.forEach(clearInterval);
    this.timers = [];
    if (!(await this.idle(STOP_WAIT_MS)))
      this.log.warn({ requests: this.live.size }, 'requests still in flight at shutdown; the sweeper will settle them');
    await Promise.all(this.running); // a sweep or a renewal under way finishes before the database goes away
    await this.flush(); // after a write already under way
    for (let left = Infinity; this.queue.length && this.queue.length < left;) {
      left = this.queue.length;
      await this.flush();
    }
    if (this.flushTimer) clearTimeout(this.flushTimer); // a failed write is not retried once the database is gone
    this.flushTimer = null;
    const idle = (l: Lease) => l.inFlight === 0 && l.unflushed === 0;
    const leases = [...this.leases.values(), ...this.retiring];
    await Promise.all(leases.filter(idle).map((l) => this.close(l)));
    for (const span of this.spans.values()) endSettlement(span, null, 'unwritten');
    this.spans.clear();
    return { unwritten: this.queue.length, leasesKept: leases.filter((l) => !l.dead).length };
  }

  /**
   * Whether the key has any money at all, before its request's body is read: in memory when it has a lease, else
   * one read. A key with nothing gets its 429 before the gateway parses, measures or validates anything.
   */
  async canSpend(p: KeyPrincipal): Promise<void> {
    const lease = this.leases.get(pair(p));
    if (lease && !lease.dead && free(lease) > 0) return;
    if ((await store.available(this.db, p.accountId, p.key.id)) <= 0) throw await this.refusal(p);
  }

  async admit(r: AdmitRequest): Promise<Admission> {
    await this.behind();
    const price = r.grades ? priceOf(r.model).graded(r.grades) : priceOf(r.model);
    const full = price.worstCase(r.promptTokens, r.outputTokens, othersOf(r));
    const lease = full > 0 ? await this.leaseFor(r.principal, full) : null;
    let hold = full;
    let outputTokens = r.outputTokens;
    if (lease) {
      this.maybeGrow(lease, r.principal, full);
    } else if (full > 0) {
      ({ hold, outputTokens } = await this.holdRow(r, price, full));
    } // else a free model: nothing to hold, no hold row (its settlement only writes a usage record)
    const live: Live = {
      requestId: r.requestId,
      admitted: r,
      price,
      startedAt: this.now(),
      hold,
      heldOutput: outputTokens,
      lease,
      checkpointed: false,
    };
    this.live.set(r.requestId, live);
    return {
      outputTokens,
      held: hold,
      track: (progress) => {
        live.progress = progress;
      },
      settle: (outcome) => this.settle(live, outcome),
    };
  }

  /**
   * A key or an account changed (disabled, deleted, its quota changed): its leases take no new request and go back
   * once the requests they carry are written, so the money they reserved is the account's again.
   */
  retire(change: { keyId: number } | { accountId: number }): void {
    for (const [k, l] of this.leases) {
      if ('keyId' in change ? l.keyId !== change.keyId : l.accountId !== change.accountId) continue;
      this.leases.delete(k);
      this.retiring.push(l);
    }
    void this.closeRetired();
  }

  private async closeRetired(): Promise<void> {
    const done = this.retiring.filter((l) => l.inFlight === 0 && l.unflushed === 0);
    if (!done.length) return;
    this.retiring = this.retiring.filter((l) => !done.includes(l));
    await Promise.all(done.map((l) => this.close(l)));
  }

  private background(work: Promise<unknown>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  /** Admitted requests not yet settled (streams among them: those tracking their progress), and settlements not yet written (metrics). */
  get depth(): { inFlight: number; streams: number; queued: number } {
    let streams = 0;
    for (const l of this.live.values()) if (l.progress) streams++;
    return { inFlight: this.live.size, streams, queued: this.queue.length };
  }

  /** Resolves once no request is in flight and every settlement is written (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.live.size || this.settling) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.flush();
  }

  /** Whether every admitted request has settled (its hold written or its settlement queued) within `ms`. */
  private async idle(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const done = (async () => {
      while (this.live.size || this.settling) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      return true as const;
    })();
    try {
      return await Promise.race([done, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  // -------------------------------------------------------------------------------------------------------------
  // Leases

  /**
   * A lease of this key with `full` taken out of it for the request, opened or grown if the money allows; null: take
   * a per-request hold. A process opens one lease of a key at a time: the key's requests that arrive meanwhile wait
   * for it instead of opening their own (each of which reserved a slice of the same stale balance: eight of them
   * were all of it, and the key's other requests were refused with money in the account).
   */
  private async leaseFor(p: KeyPrincipal, full: number): Promise<Lease | null> {
    const key = pair(p);
    const opening = this.opening.get(key);
    if (opening) await opening;
    let lease: Lease | null | undefined = this.leases.get(key);
    if (lease?.dead) {
      this.leases.delete(key);
      lease = undefined;
    }
    if (!lease) {
      if (opening) return null; // the one it waited for was not opened (too little money for a lease)
      const open = this.open(p, full);
      const waited = open.then(
        () => undefined,
        () => undefined,
      );
      this.opening.set(key, waited);
      try {
        lease = await open;
      } finally {
        if (this.opening.get(key) === waited) this.opening.delete(key);
      }
      if (!lease) return null;
    } else if (free(lease) < full) {
      await this.grow(lease, p, full);
    }
    return this.take(lease, full);
  }

  /** Takes `full` out of the lease if it has that much free: checked and taken at once, so that no lease is overdrawn. */
  private take(lease: Lease, full: number): Lease | null {
    if (lease.dead || free(lease) < full) return null;
    lease.inFlight += full;
    lease.lastUsed = this.now();
    return lease;
  }

  /**
   * Opens a lease of the key: a slice of what it can reserve, worked out again under lock when reserving (processes
   * that open leases of one key at once each take a share of what the others left). Null when the money is too
   * short for a lease to be worth it.
   */
  private async open(p: KeyPrincipal, full: number): Promise<Lease | null> {
    if (!this.slice(await store.available(this.db, p.accountId, p.key.id), full)) return null;
    const id = `lease_${crypto.randomUUID().replace(/-/g, '')}`;
    const amount = await store.openLease(this.db, {
      id,
      accountId: p.accountId,
      keyId: p.key.id,
      owner: this.owner,
      amount: (available) => this.slice(available, full),
      expiresAt: this.expiry(),
      now: this.now(),
    });
    if (!amount) return null;
    const lease: Lease = {
      id,
      accountId: p.accountId,
      keyId: p.key.id,
      amount,
      inFlight: 0,
      unflushed: 0,
      lastUsed: this.now(),
      growing: null,
      dead: false,
    };
    this.leases.set(pair(p), lease);
    return lease;
  }

  /** The slice to lease out of `available`, or 0 when money is too short for leasing to be worth it. */
  private slice(available: number, full: number): number {
    const slice = Math.min(this.config.lease_micros, Math.floor(available / LEASE_SHARE));
    return slice >= LEASE_MIN_REQUESTS * full ? slice : 0;
  }

  /** Tops the lease up in the background when less than half of a slice is free. */
  private maybeGrow(lease: Lease, p: KeyPrincipal, full: number): void {
    if (!lease.growing && free(lease) < Math.max(LEASE_MIN_REQUESTS * full, lease.amount / 2))
      void this.grow(lease, p, full);
  }

  private grow(lease: Lease, p: KeyPrincipal, full: number): Promise<void> {
    lease.growing ??= (async () => {
      try {
        const available = await store.available(this.db, p.accountId, p.key.id);
        const target = this.slice(available + free(lease), full);
        const more = Math.min(available, target - free(lease));
        if (more <= 0) return;
        const ok = await store.growLease(this.db, {
          id: lease.id,
          accountId: lease.accountId,
          keyId: lease.keyId,
          amount: more,
          expiresAt: this.expiry(),
        });
        if (ok) lease.amount += more;
      } catch (e) {
        this.log.warn({ err: (e as Error).message }, 'could not grow a credit lease');
      } finally {
        lease.growing = null;
      }
    })();
    return lease.growing;
  }

  private async close(lease: Lease): Promise<void> {
    if (this.leases.get(`${lease.accountId}:${lease.keyId}`) === lease)
      this.leases.delete(`${lease.accountId}:${lease.keyId}`);
    lease.dead = true;
    try {
      await store.closeLease(this.db, lease.id);
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'could not return a credit lease; it expires on its own');
    }
  }

  // -------------------------------------------------------------------------------------------------------------
  // Per-request holds

  /** Holds the worst case; if the money covers less, a lower output allowance (never below the minimum). */
  private async holdRow(r: AdmitRequest, price: Price, full: number): Promise<{ hold: number; outputTokens: number }> {
    const row = (amount: number): store.HoldRow => ({
      request_id: r.requestId,
      endpoint: r.endpoint,
      account_id: r.principal.accountId,
      key_id: r.principal.key.id,
      model: r.model.id,
      amount_micros: amount,
      progress_micros: 0,
      prompt_tokens: r.promptTokens,
      completion_tokens: 0,
    });
    if (await store.hold(this.db, row(full), this.expiry(), this.now()))
      return { hold: full, outputTokens: r.outputTokens };
    if (r.outputTokens === 0 || r.lowerable === false || r.fixedOutput) throw await this.refusal(r.principal);
    const others = othersOf(r);
    const fits = price.affordableOutput(
      r.promptTokens,
      await store.available(this.db, r.principal.accountId, r.principal.key.id),
      others,
    );
    // Each choice gets at least a token: an upstream limit of 0 is no limit at all for some (an unset proto field).
    if (
      fits === null ||
      fits < Math.max(this.config.min_output_tokens, (r.choices ?? 1) * (1 + (r.extraPerChoice ?? 0)))
    )
      throw await this.refusal(r.principal);
    const lowered = Math.min(fits, r.outputTokens);
    const amount = price.worstCase(r.promptTokens, lowered, others);
    if (!(await store.hold(this.db, row(amount), this.expiry(), this.now()))) throw await this.refusal(r.principal);
    return { hold: amount, outputTokens: lowered };
  }

  /** The 429 for a request the money does not cover: naming the key's budget when that is what stops it. */
  private async refusal(p: KeyPrincipal): Promise<ApiError> {
    const cause = await store
      .spendCause(this.db, p.accountId, p.key.id, this.now())
      .catch((): store.SpendCause => ({ reason: 'account_balance' }));
    return cause.reason === 'key_budget' ? budgetExhausted(cause) : insufficientQuota(cause.reason);
  }

  // -------------------------------------------------------------------------------------------------------------
  // Settlement

  private async settle(live: Live, outcome: Outcome): Promise<void> {
    if (!this.live.delete(live.requestId)) return;
    const used = outcome.used;
    const cost = used ? this.chargedAt(live, used).cost(used.usage) : 0;
    const r = live.admitted;
    const now = this.now();
    const s: store.Settlement = {
      requestId: live.requestId,
      accountId: r.principal.accountId,
      keyId: r.principal.key.id,
      model: r.model.id,
      endpoint: r.endpoint,
      charge: 0,
      uncovered: 0,
      status: outcome.status,
      provider: used?.provider || null,
      counted: used?.counted ?? 'none',
      usage: used?.usage ?? NO_USAGE,
      latencyMs: now - live.startedAt,
      ttfbMs: outcome.ttfbMs ?? null,
      at: now,
      leaseId: live.lease?.id ?? null,
      checkpointed: live.checkpointed,
      held: live.hold > 0 ? { micros: live.hold, promptTokens: r.promptTokens, outputTokens: live.heldOutput } : null,
    };
    this.onSettled?.(s, cost);
    const span = r.trace && settlementSpan(r.trace, s, cost, live);
    this.settling++; // until its hold is written (a per-request hold is settled in the database right away)
    try {
      if (live.lease) {
        const lease = live.lease;
        lease.inFlight -= live.hold;
        // A request may take its own hold, and beyond it only what its lease has free; the rest is a shortfall.
        s.charge = Math.min(cost, Math.max(0, free(lease)));
        s.uncovered = cost - s.charge;
        lease.unflushed += s.charge;
        if (span) this.spans.set(s.requestId, span);
        this.enqueue(s, lease);
      } else if (live.hold === 0) {
        s.uncovered = cost; // a free request (a model without prices): nothing to charge, a usage record to write
        if (span) this.spans.set(s.requestId, span);
        this.enqueue(s, null);
      } else {
        const charge = await store.settleHold(this.db, this.holdOf(live), { ...s, cost });
        if (charge !== null && charge < cost) this.shortfall(s, cost - charge);
        if (span) endSettlement(span, { charge: charge ?? 0, uncovered: cost - (charge ?? 0), rows: 1 });
      }
    } catch (e) {
      if (span) endSettlement(span, null, e);
      // A per-request hold stays in the database; the sweeper settles it once its lease expires.
      this.log.error(
        { reqId: live.requestId, err: (e as Error).message },
        'settlement failed; the sweeper will settle this request',
      );
    } finally {
      this.settling--;
      if (!this.live.size && !this.settling) this.idleWaiters.splice(0).forEach((w) => w());
    }
  }

  /**
   * The price a usage is charged at: a graded class (images) at the grade the upstream made when it is one the
   * request allowed; otherwise at the dearest the request allowed, what its hold priced it at.
   */
  private chargedAt(live: Live, used: Used): Price {
    const { grades, model } = live.admitted;
    return used.grade && grades?.includes(used.grade) ? priceOf(model).graded([used.grade]) : live.price;
  }

  private holdOf(live: Live): store.HoldRow {
    const r = live.admitted;
    return {
      request_id: live.requestId,
      endpoint: r.endpoint,
      account_id: r.principal.accountId,
      key_id: r.principal.key.id,
      model: r.model.id,
      amount_micros: live.hold,
      progress_micros: 0,
      prompt_tokens: r.promptTokens,
      completion_tokens: 0,
    };
  }

  private shortfall(s: { requestId: string; accountId: number; model: string }, uncovered: number): void {
    this.log.warn(
      { reqId: s.requestId, account: s.accountId, model: s.model, uncovered_micros: uncovered },
      'the upstream billed more than was held: shortfall recorded',
    );
  }

  private enqueue(s: store.Settlement, lease: Lease | null): void {
    this.queue.push({ s, lease });
    // A full batch starts a write unless one is under way: that one goes on to the next full batch when it is done.
    // (Each settlement queued behind a write under way used to add a flush() waiting for it: under overload tens of
    // thousands of them, each kept and woken again at every batch.)
    if (this.queue.length >= this.config.flush_rows) {
      if (!this.flushing) void this.flush();
    } else this.flushTimer ??= setTimeout(() => void this.flush(), this.config.flush_ms);
  }

  /**
   * Back-pressure on the write-behind: while more than BACKLOG_BATCHES batches wait to be written, a new request
   * waits for the batch being written. A gateway that answers faster than its database takes the settlements (on a
   * saturated CPU, where the batches' statements compete with the requests) otherwise queues them without bound:
   * measured on MariaDB at 128 connections, 36,000 settlements after 10 s (with the flush() calls that piled up
   * behind them then: see `enqueue`), holding memory and leaving seconds of traffic unwritten, where the write-behind
   * promises at most `flush_ms` of it. Not while writes fail: a failed batch is tried again later, and
   * requests go on under their leases meanwhile, as they did (a database outage is served from leases).
   */
  private async behind(): Promise<void> {
    while (this.queue.length >= this.config.flush_rows * BACKLOG_BATCHES && !this.writeFailed) {
      if (!this.flushing) void this.flush(); // starts a batch at once (it sets `flushing` before it awaits anything)
      await this.flushing; // the batch under way only, not every batch after it
    }
  }

  /** Writes every queued settlement (one transaction per batch); a failed batch is tried again later. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (!this.queue.length) return;
    const batch = this.queue.splice(0, this.config.flush_rows);
    this.flushing = (async () => {
      try {
        const { goneLeases, written } = await store.writeSettlements(
          this.db,
          batch.map((b) => b.s),
        );
        const gone = new Set(goneLeases);
        for (const { s, lease } of batch) {
          if (!lease) continue;
          lease.unflushed -= s.charge;
          if (!gone.has(lease.id)) lease.amount -= s.charge;
        }
        for (const id of gone) this.markDead(id);
        for (const w of written) if (w.uncovered > 0) this.shortfall(w, w.uncovered);
        if (this.spans.size) this.written(batch.map((b) => b.s));
        this.writeFailed = false;
      } catch (e) {
        this.writeFailed = true;
        this.log.error({ err: (e as Error).message, rows: batch.length }, 'could not write settlements; trying again');
        for (const b of batch) b.s.retried = true;
        this.queue.unshift(...batch);
        this.flushTimer ??= setTimeout(() => void this.flush(), Math.max(this.config.flush_ms, 1000));
      } finally {
        this.flushing = null;
      }
    })();
    await this.flushing;
    await this.closeRetired();
    if (this.queue.length >= this.config.flush_rows) await this.flush();
    else if (this.queue.length) this.flushTimer ??= setTimeout(() => void this.flush(), this.config.flush_ms);
  }

  /** The settlements' spans end: their usage records and ledger rows are in the database. */
  private written(batch: store.Settlement[]): void {
    for (const s of batch) {
      const span = this.spans.get(s.requestId);
      if (!span) continue;
      this.spans.delete(s.requestId);
      endSettlement(span, { charge: s.charge, uncovered: s.uncovered, rows: batch.length });
    }
  }

  private markDead(id: string): void {
    for (const [k, l] of this.leases) {
      if (l.id !== id) continue;
      l.dead = true;
      this.leases.delete(k);
      this.log.warn(
        { lease: id },
        'a credit lease of this process was swept (was the process stalled?); its requests are charged directly',
      );
    }
  }

  // -------------------------------------------------------------------------------------------------------------
  // Renewal, checkpoints, idle leases, the sweeper

  /** Renews this process's leases and holds, records checkpoints of requests in flight, returns idle leases. */
  async renew(): Promise<void> {
    const expires = this.expiry();
    try {
      const gone = await store.renewLeases(
        this.db,
        [...this.leases.values()].map((l) => l.id),
        expires,
      );
      gone.forEach((id) => this.markDead(id));
      // A request that holds nothing (a free model) has nothing to charge should the process die.
      const rows = [...this.live.values()]
        .filter((live) => live.lease || live.hold > 0)
        .map((live) => {
          const fresh = !!live.lease && !live.checkpointed;
          live.checkpointed ||= !!live.lease;
          return {
            ...this.holdOf(live),
            amount_micros: live.lease ? 0 : live.hold,
            ...this.progressOf(live),
            lease_id: live.lease?.id ?? null,
            fresh,
          };
        });
      await store.checkpoint(this.db, rows, expires, this.now());
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'could not renew leases and holds');
    }
    const idle = this.now() - this.config.lease_idle_ms;
    for (const l of [...this.leases.values()]) {
      if (l.inFlight === 0 && l.unflushed === 0 && l.lastUsed < idle && !l.growing) await this.close(l);
    }
  }

  /** What a request in flight has certainly cost: its upstream usage if known, else about a token per 4 bytes. */
  private progressOf(live: Live): { progress_micros: number; prompt_tokens: number; completion_tokens: number } {
    const p = live.progress?.() ?? { usage: null, generatedBytes: 0 };
    const counted = p.usage ?? usage(Math.ceil(live.admitted.promptBytes / 4), Math.ceil(p.generatedBytes / 4));
    const u = { ...counted, ...live.admitted.units }; // a speech input's characters are spent once it is sent
    return {
      progress_micros: Math.min(live.hold, live.price.cost(u)),
      prompt_tokens: u.prompt,
      completion_tokens: u.completion,
    };
  }

  /**
   * Settles holds and leases whose lease expired (their process died): charges what was recorded as certainly
   * spent, releases the rest. Safe in several processes at once: each is settled by whoever deletes it first.
   */
  async sweep(): Promise<number> {
    let settled = 0;
    const now = this.now();
    try {
      for (const h of await store.expiredHolds(this.db, now)) settled += await this.sweepHold(h, now);
      for (const id of await store.expiredLeases(this.db, now)) {
        try {
          settled += await store.sweepLease(this.db, id, now);
        } catch (e) {
          this.log.error(
            { lease: id, err: (e as Error).message },
            'could not settle an expired lease; the next sweep tries again',
          );
        }
      }
      if (settled) this.log.warn({ settled }, 'settled requests left by a process that stopped');
    } catch (e) {
      this.log.error({ err: (e as Error).message }, 'sweep failed');
    }
    return settled;
  }

  /** One expired per-request hold; a failure is logged and does not stop the sweep of the others. */
  private async sweepHold(h: store.HoldRow, now: number): Promise<number> {
    const progress = Math.min(Number(h.progress_micros), Number(h.amount_micros));
    try {
      const charged = await store.settleHold(this.db, h, {
        requestId: h.request_id,
        accountId: Number(h.account_id),
        keyId: Number(h.key_id),
        model: h.model,
        endpoint: h.endpoint,
        cost: progress,
        status: 500,
        provider: null,
        counted: 'checkpoint',
        usage: usage(progress > 0 ? Number(h.prompt_tokens) : 0, Number(h.completion_tokens)),
        latencyMs: null,
        ttfbMs: null,
        at: now,
      });
      return charged !== null ? 1 : 0;
    } catch (e) {
      this.log.error(
        { reqId: h.request_id, err: (e as Error).message },
        'could not settle an expired hold; the next sweep tries again',
      );
      return 0;
    }
  }

  private expiry(): number {
    return this.now() + this.config.hold_ttl_ms;
  }
}

/**
 * A request's bounds of the families other than prompt and output, by class name: those it states (`others`:
 * generated images) and what it uses whatever its answer (`units`: a speech input's characters, a moderation request,
 * search units), by family (usage.ts, familyBounds), added up.
 */
function othersOf(r: AdmitRequest): Record<string, number> {
  const out: Record<string, number> = { ...r.others };
  for (const [name, n] of Object.entries(familyBounds(r.units ?? {}))) out[name] = (out[name] ?? 0) + n;
  return out;
}

const pair = (p: KeyPrincipal) => `${p.accountId}:${p.key.id}`;
const free = (l: Lease) => l.amount - l.inFlight - l.unflushed;

/**
 * A request's settlement, as a span under its request's: from the moment it is settled to the moment its usage
 * record is written (batched, a moment later, for a lease's requests), with what it cost.
 */
function settlementSpan(t: RequestTrace, s: store.Settlement, cost: number, live: Live): Span {
  t.span.setAttribute('switchyard.cost_micro_usd', cost);
  return t.child('settlement', {
    'switchyard.cost_micro_usd': cost,
    'switchyard.settlement.mode': live.lease ? 'lease' : live.hold === 0 ? 'free' : 'hold',
    'switchyard.settlement.status': s.status,
    'switchyard.account.id': s.accountId,
    'switchyard.key.id': s.keyId,
  });
}

function endSettlement(
  span: Span,
  done: { charge: number; uncovered: number; rows: number } | null,
  e?: unknown,
): void {
  if (done)
    span.setAttributes({
      'switchyard.charge_micro_usd': done.charge,
      'switchyard.uncovered_micro_usd': done.uncovered,
      'switchyard.settlement.batch_rows': done.rows,
    });
  else fail(span, e ?? 'unwritten');
  span.end();
}
