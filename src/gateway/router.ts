/**
 * Chooses and tries a model's routes. Routes go by `priority` (lower first) and, within one priority, in a random
 * order weighted by `weight`. A route that fails before anything was sent to the client — connection refused, a
 * timeout, an upstream 5xx or 429, an unreadable answer — hands over to the next one; a request the upstream rejects
 * as the caller's fault is not retried. A route that fails `breaker_failures` times in a row is skipped for
 * `breaker_cooldown_ms`, then one request probes it. No route left to try: 503; all tried and failed: the last
 * failure (502, or 429 when the upstream rate-limited us).
 */
import type { ModelConfig, RouteConfig, RoutingConfig } from '../config';
import { ApiError, errors } from '../errors';
import { fail, traceHeaders, type RequestTrace, type Span } from '../tracing';
import { Cancel, type Abortable } from './cancel';
import type { Provider } from './providers';
import { UpstreamError } from './types';

const CALLER_FAULT = new Set([400, 413, 422]);

type BreakerState = { failures: number; openUntil: number; probing: boolean };

/**
 * One try of one route; `signal` fires when the client leaves or the route's total time is up. `traced`: the W3C
 * trace-context headers of the attempt's span, to send upstream (tracing on only).
 */
export type Attempt<T> = (
  provider: Provider,
  route: RouteConfig,
  signal: Abortable,
  traced: Record<string, string> | undefined,
  /** The attempt's own cancellation (`signal` is the same object): a limit of one step of the attempt aborts it. */
  controller: Cancel,
) => Promise<T>;

export interface Routed<T> {
  value: T;
  route: RouteConfig;
  /** Aborts the upstream call (for the route's total time limit, or when the consumer gives up). */
  controller: Cancel;
  /** Clears the route's total-time timer (and ends the attempt's span); call when the answer is complete. */
  finish(): void;
  /** The attempt's span (tracing on): what the answer said is added to it before finish() ends it. */
  span?: Span;
}

export type BreakerPosition = 'closed' | 'open' | 'half_open';

/** A failed attempt of a route, as the operator's overview shows it: when, the upstream's status (if it answered), why. */
export interface RouteFailure {
  at: number;
  status: number | null;
  message: string;
}

/** How many failed attempts of each route are kept (newest first), for the operator's overview. */
const RECENT_FAILURES = 5;

/** A route's attempts and failures (those its breaker counts) in one hour; a day of them is kept. */
type Tally = { hour: number; tried: number; failed: number };
const HOUR_MS = 3_600_000;
const TALLY_HOURS = 24;

export class Router {
  private readonly breakers = new Map<string, BreakerState>();
  private readonly failures = new Map<string, RouteFailure[]>();
  private readonly tallies = new Map<string, Tally[]>();
  /**
   * Set while the process shuts down. New requests are refused at the door (503, before their body is read) and
   * readiness fails; a request that came in before still gets its upstream call.
   */
  draining = false;
  /** Told of every failed attempt (metrics): the route (`provider/model`) and why. */
  onFailure: ((route: string, cause: string) => void) | null = null;

  constructor(
    private readonly providers: Map<string, Provider>,
    private readonly routing: RoutingConfig,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  /** The order in which a request tries the model's routes. */
  order(model: ModelConfig): RouteConfig[] {
    if (model.routes.length === 1) return model.routes;
    const byPriority = new Map<number, RouteConfig[]>();
    for (const r of model.routes) byPriority.set(r.priority, [...(byPriority.get(r.priority) ?? []), r]);
    return [...byPriority.keys()].sort((a, b) => a - b).flatMap((p) => this.weightedShuffle(byPriority.get(p)!));
  }

  /**
   * Tries the routes in order; `clientSignal` (if any) cancels the attempt under way when the client goes away.
   * `t`: the request's trace (tracing on): each attempt is a span under it.
   */
  async run<T>(
    model: ModelConfig,
    clientSignal: AbortSignal | undefined,
    attempt: Attempt<T>,
    t?: RequestTrace,
  ): Promise<Routed<T>> {
    let last: UpstreamError | undefined;
    let lastRoute: RouteConfig | undefined;
    let tried = 0;
    for (const route of this.order(model)) {
      if (!this.admit(route)) continue;
      const controller = new Cancel(); // not an AbortController: see cancel.ts
      const onClient = () => controller.abort(new UpstreamError('aborted', 'the client went away'));
      clientSignal?.addEventListener('abort', onClient, { once: true });
      const deadline = deadlines.add(route.timeouts.total_ms, () =>
        controller.abort(new UpstreamError('timeout', `the route took longer than ${route.timeouts.total_ms} ms`)),
      );
      const provider = this.providers.get(route.provider)!;
      const span = t && attemptSpan(t, provider, route, tried);
      tried++;
      const finish = () => {
        deadlines.remove(deadline);
        clientSignal?.removeEventListener('abort', onClient);
        span?.end();
      };
      if (clientSignal?.aborted) onClient();
      this.tally(route).tried += 1;
      try {
        const value = await attempt(provider, route, controller, span && traceHeaders(span), controller);
        this.succeeded(route);
        if (span && provider.remote) span.setAttribute('http.response.status_code', 200);
        return { value, route, controller, finish, span };
      } catch (e) {
        const failure = explain(e, controller);
        if (span) fail(span, failure?.reason ?? 'error', failure?.reason === 'status' ? failure.status : undefined);
        finish();
        this.onFailure?.(`${route.provider}/${route.model}`, failure?.reason ?? 'error');
        if (failure && failure.reason !== 'aborted') this.remember(route, failure);
        if (!failure || failure.reason === 'aborted' || failure.reason === 'invalid') this.released(route); // tells nothing about the route
        if (!failure) throw e;
        last = failure;
        lastRoute = route;
        if (failure.reason === 'aborted' || failure.reason === 'invalid') break; // the request, not the route
        if (failure.reason === 'status' && CALLER_FAULT.has(failure.status!)) {
          this.succeeded(route); // the upstream answered: it is alive, the request was at fault
          break;
        }
        this.failed(route);
      }
    }
    if (!last) throw errors.unavailable(); // every route is cooling down
    const e = toApiError(last);
    e.logged = { route: `${lastRoute!.provider}/${lastRoute!.model}`, upstream: last.message }; // which route failed, and how
    throw e;
  }

  /**
   * Each route's breaker (metrics): closed (used), open (skipped, cooling down) or half-open (cooled down after
   * failures: one probe at a time, until one succeeds).
   */
  breakerStates(): { route: string; state: BreakerPosition }[] {
    const now = this.now();
    const position = (b: BreakerState): BreakerPosition =>
      b.failures < this.routing.breaker_failures ? 'closed' : b.openUntil > now ? 'open' : 'half_open';
    return [...this.breakers.entries()].map(([k, b]) => ({ route: k.replace('\u0000', '/'), state: position(b) }));
  }

  /**
   * One route in this process: its breaker, its attempts and failures (those its breaker counts) over the last 24
   * hours, and its last failed attempts (newest first).
   */
  routeHealth(route: RouteConfig): {
    breaker: BreakerPosition;
    tried: number;
    failed: number;
    failures: RouteFailure[];
  } {
    const b = this.breakers.get(key(route));
    const now = this.now();
    const breaker: BreakerPosition =
      !b || b.failures < this.routing.breaker_failures ? 'closed' : b.openUntil > now ? 'open' : 'half_open';
    const since = Math.floor(now / HOUR_MS) - TALLY_HOURS;
    const day = (this.tallies.get(key(route)) ?? []).filter((t) => t.hour > since);
    const sum = (f: 'tried' | 'failed') => day.reduce((n, t) => n + t[f], 0);
    return {
      breaker,
      tried: sum('tried'),
      failed: sum('failed'),
      failures: [...(this.failures.get(key(route)) ?? [])],
    };
  }

  /** The route's tally of this hour (a new hour starts a new one; older than a day are dropped). */
  private tally(route: RouteConfig): Tally {
    const hour = Math.floor(this.now() / HOUR_MS);
    const list = this.tallies.get(key(route)) ?? [];
    if (list[0]?.hour !== hour)
      this.tallies.set(key(route), [{ hour, tried: 0, failed: 0 }, ...list.slice(0, TALLY_HOURS)]);
    return this.tallies.get(key(route))![0];
  }

  /** Keeps a failed attempt for the overview; the message is ours (an UpstreamError's), never a URL or a credential. */
  private remember(route: RouteConfig, e: UpstreamError): void {
    const list = this.failures.get(key(route)) ?? [];
    list.unshift({ at: this.now(), status: e.status ?? null, message: e.message.slice(0, 300) });
    this.failures.set(key(route), list.slice(0, RECENT_FAILURES));
  }

  /** A failure after the route had answered (a stream that broke, `cause` given) or of an attempt: counts against the route's breaker. */
  failed(route: RouteConfig, cause?: string): void {
    if (cause) {
      this.onFailure?.(`${route.provider}/${route.model}`, cause);
      this.remember(route, new UpstreamError('invalid', `the stream failed: ${cause}`));
    }
    this.tally(route).failed += 1;
    const b = this.breaker(route);
    b.failures += 1;
    b.probing = false;
    if (b.failures >= this.routing.breaker_failures) b.openUntil = this.now() + this.routing.breaker_cooldown_ms;
  }

  /** An attempt that says nothing about the route's health ends: a half-open route may be probed again. */
  private released(route: RouteConfig): void {
    const b = this.breakers.get(key(route));
    if (b) b.probing = false;
  }

  private succeeded(route: RouteConfig): void {
    const b = this.breaker(route); // closed again, in place: no new object per answer
    b.failures = 0;
    b.openUntil = 0;
    b.probing = false;
  }

  /** Closed: go. Open: skip until the cool-down ends. Then half-open: let one probe through at a time. */
  private admit(route: RouteConfig): boolean {
    const b = this.breakers.get(key(route));
    if (!b || b.failures < this.routing.breaker_failures) return true;
    if (b.openUntil > this.now() || b.probing) return false;
    b.probing = true;
    return true;
  }

  private breaker(route: RouteConfig): BreakerState {
    let b = this.breakers.get(key(route));
    if (!b) this.breakers.set(key(route), (b = { failures: 0, openUntil: 0, probing: false }));
    return b;
  }

  private weightedShuffle(routes: RouteConfig[]): RouteConfig[] {
    const pool = [...routes];
    const out: RouteConfig[] = [];
    while (pool.length) {
      let pick = this.random() * pool.reduce((s, r) => s + r.weight, 0);
      let i = 0;
      while (i < pool.length - 1 && (pick -= pool[i].weight) >= 0) i++;
      out.push(...pool.splice(i, 1));
    }
    return out;
  }
}

const key = (r: RouteConfig) => `${r.provider}\u0000${r.model}`;

/** An attempt's span: the GenAI inference span of the route's upstream model, with the route and its place. */
function attemptSpan(t: RequestTrace, provider: Provider, route: RouteConfig, index: number): Span {
  return t.attempt(route.model, {
    'gen_ai.provider.name': provider.descriptor.genAi ?? `switchyard.${provider.descriptor.type}`,
    'switchyard.provider': route.provider,
    'switchyard.route': `${route.provider}/${route.model}`,
    'switchyard.fallback.index': index,
  });
}

/** The UpstreamError behind a failed attempt (our own timeouts included), or null for any other error. */
export function explain(e: unknown, signal: Pick<Abortable, 'aborted' | 'reason'>): UpstreamError | null {
  const reason = signal.aborted ? signal.reason : undefined;
  if (
    reason instanceof UpstreamError &&
    (!(e instanceof UpstreamError) || e.reason === 'aborted' || e.reason === 'connect')
  ) {
    return reason;
  }
  if (e instanceof UpstreamError) return e;
  if ((e as Error)?.name === 'AbortError' && reason instanceof UpstreamError) return reason;
  return null;
}

/** What a time limit aborts: an attempt's Cancel (or an AbortController). */
type Aborts = { abort(reason: unknown): void };

/** Races a step of an upstream call against a time limit; on expiry the call is aborted with a timeout. */
export async function within<T>(step: Promise<T>, ms: number, controller: Aborts, what: string): Promise<T> {
  step.catch(() => {}); // it may reject after the race is decided
  let deadline: Deadline | undefined;
  const expired = new Promise<never>((_, reject) => {
    deadline = deadlines.add(ms, () => {
      const e = new UpstreamError('timeout', `no ${what} within ${ms} ms`);
      controller.abort(e);
      reject(e);
    });
  });
  try {
    return await Promise.race([step, expired]);
  } finally {
    deadlines.remove(deadline!);
  }
}

/**
 * A stream's idle limit: no wait for its next chunk may last `ms`. One deadline for the whole stream, moved on only
 * when it is reached while no wait has lasted that long (`within` per chunk cost a deadline, a closure and a promise
 * for every chunk of every stream). A wait starts when the next chunk is asked for: time spent writing to a slow
 * client does not count against the upstream.
 */
export class IdleLimit {
  /** When the wait for the next chunk began; 0 while not waiting. */
  private since = 0;
  private deadline: Deadline;
  /** Rejects the wait under way. */
  private reject: ((e: UpstreamError) => void) | null = null;
  private expired: UpstreamError | null = null;

  constructor(
    private readonly ms: number,
    private readonly controller: Aborts,
    private readonly what: string,
  ) {
    this.deadline = deadlines.add(ms, this.check);
  }

  /**
   * The step (the next chunk), unless no chunk comes within the limit: then the call is aborted with a timeout.
   * Not `Promise.race` with one promise of the limit's for the whole stream: every race adds a reaction to that
   * promise, which stays pending until the stream ends, and each reaction holds its race's result — the chunk.
   * So every chunk of a stream lived as long as the stream, and a scavenge promoted them (~35 KB a chat stream).
   */
  next<T>(step: Promise<T>): Promise<T> {
    if (this.expired) return Promise.reject(this.expired);
    this.since = Date.now();
    return new Promise<T>((resolve, reject) => {
      this.reject = reject;
      step.then(
        (v) => {
          this.waited();
          resolve(v);
        },
        (e: unknown) => {
          this.waited();
          reject(e);
        },
      );
    });
  }

  end(): void {
    deadlines.remove(this.deadline);
  }

  private waited(): void {
    this.since = 0;
    this.reject = null;
  }

  private readonly check = () => {
    const waited = this.since ? Date.now() - this.since : 0;
    if (waited < this.ms) {
      this.deadline = deadlines.add(this.ms - waited, this.check); // the earliest moment the wait under way can expire
      return;
    }
    const e = (this.expired = new UpstreamError('timeout', `no ${this.what} within ${this.ms} ms`));
    const reject = this.reject;
    this.waited();
    this.controller.abort(e);
    reject?.(e);
  };
}

/** A time limit of an attempt or of one step of it: what happens when it is reached. */
export interface Deadline {
  at: number;
  expire: () => void;
}

/**
 * Every time limit of the upstream calls in flight, on one timer. A timer per attempt (and per streamed chunk) was
 * a Timeout object and two timer-list operations each, on every paid request: measured in the CPU profile. Here
 * starting and ending a limit is a Set insertion and deletion; the one timer is armed for the earliest limit and
 * only moved when a sooner one comes in (rare: a model's routes share their limits, so later calls end later).
 * When it fires it expires what is due and re-arms for the next; limits that ended meanwhile cost nothing.
 */
export class Deadlines {
  private readonly live = new Set<Deadline>();
  private timer: NodeJS.Timeout | null = null;
  private armedAt = Infinity;

  constructor(private readonly now: () => number = Date.now) {}

  /** `expire` runs once `ms` have passed, unless the limit is removed first. */
  add(ms: number, expire: () => void): Deadline {
    const d = { at: this.now() + ms, expire };
    this.live.add(d);
    if (d.at < this.armedAt) this.arm(d.at);
    return d;
  }

  remove(d: Deadline): void {
    this.live.delete(d);
  }

  /** Limits not yet reached nor removed (tests, metrics). */
  get size(): number {
    return this.live.size;
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedAt = at;
    // Unref'd: a limit never keeps the process alive (the call it limits does, while it runs).
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - this.now())).unref();
  }

  private fire(): void {
    this.timer = null;
    this.armedAt = Infinity;
    const now = this.now();
    const due: Deadline[] = [];
    let next = Infinity;
    for (const d of this.live) {
      if (d.at <= now) due.push(d);
      else if (d.at < next) next = d.at;
    }
    for (const d of due) this.live.delete(d);
    if (next < Infinity) this.arm(next); // before the expiries, which may add limits of their own
    for (const d of due) d.expire();
  }
}

/** The process's time limits of upstream calls (one timer for all of them). */
const deadlines = new Deadlines();

/** What the client is told about an upstream failure: never a URL or a credential. */
export function toApiError(e: UpstreamError): ApiError {
  if (e.reason === 'aborted')
    return new ApiError(499, 'invalid_request_error', 'The client closed the request', 'client_closed_request');
  if (e.reason === 'status' && e.status === 429) return errors.upstreamRateLimited();
  if (e.reason === 'invalid' || (e.reason === 'status' && CALLER_FAULT.has(e.status!))) {
    return new ApiError(
      400,
      'invalid_request_error',
      e.upstreamMessage ?? 'The upstream provider rejected the request',
      'upstream_bad_request',
    );
  }
  if (e.reason === 'timeout') return errors.upstreamUnavailable('timed out');
  if (e.reason === 'status') return errors.upstreamUnavailable(`HTTP ${e.status}`);
  if (e.reason === 'connect') return errors.upstreamUnavailable('connection failed');
  return errors.upstreamUnavailable('unreadable answer');
}

/** The error that ends a stream which failed after it started. */
export function streamErrorOf(e: unknown): ApiError {
  if (e instanceof UpstreamError && e.reason !== 'aborted' && e.reason !== 'invalid') {
    const why =
      e.reason === 'timeout'
        ? 'it stopped sending (timed out)'
        : e.upstreamMessage
          ? e.upstreamMessage
          : 'its stream broke off';
    return new ApiError(
      502,
      'upstream_error',
      `The upstream provider failed during the stream: ${why}`,
      'upstream_stream_error',
    );
  }
  return e instanceof ApiError ? e : errors.internal();
}

export const streamErrorBody = (e: unknown) => streamErrorOf(e).toBody();
