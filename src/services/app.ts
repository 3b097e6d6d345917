/**
 * The composition root: every service of a running gateway, made once from the configuration and handed to the
 * handlers as `app`. Domain modules take what they need explicitly; nothing below reaches back into this bag.
 */
import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { KeyCache } from '../accounts/keyCache';
import { Billing } from '../billing/billing';
import { RateLimits } from '../billing/limits';
import { RefusalCounts } from '../billing/refusals';
import { CardPayments, stripeSettingsFromEnv } from '../billing/stripe';
import { loadConfig as load, parseConfig as parse, type Config } from '../config';
import { Gateway } from '../gateway/gateway';
import type { BreakerPosition } from '../gateway/router';
import { PROVIDER_CATALOG } from '../gateway/providers';
import { databaseAnswers } from '../db';
import { pruneUsageRecords } from '../db/queries/usage';
import { Metrics } from '../metrics';
import { secretKey as readSecretKey } from '../secrets';
import { Catalog } from './catalog';
import { ConsoleLimits, sha256 } from './consoleLimits';
import { checkLowBalances } from './alerts';
import { purgeIdempotencyKeys } from './idempotency';
import { Mailer } from './mailer';
import { Metered } from './metered';
import { OidcSignIn } from './oidc';
import { StoredResponses } from './responses';

export interface App {
  config: Config;
  db: Knex;
  log: Logger;
  redis: Redis | null;
  gateway: Gateway;
  billing: Billing;
  /** Refused calls of known keys, counted in memory and written in batches. */
  refusals: RefusalCounts;
  /** The request layer of paid /v1 calls. */
  metered: Metered;
  /** API keys in memory (and how a change to one reaches every process). */
  keys: KeyCache;
  /** Card payments, when Stripe is configured (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET). */
  cards: CardPayments | null;
  /** SHA-256 of ADMIN_TOKEN, or null: the admin API is off. */
  adminTokenHash: Buffer | null;
  consoleLimits: ConsoleLimits;
  /** Operators' failed sign-ins, counted apart from the console's under the same rules. */
  operatorLimits: ConsoleLimits;
  /** Stored responses of the Responses API. */
  responses: StoredResponses;
  metrics: Metrics;
  /** Verification and password-reset mail (or the log, without an SMTP server). */
  mailer: Mailer;
  /** SHA-256 of METRICS_TOKEN, or null: /metrics needs no token. */
  metricsTokenHash: Buffer | null;
  /** Operators' sign-in with an OpenID provider (`admin.oidc`), or null: not configured. */
  oidc: OidcSignIn | null;
  /** Providers and models: from the file, or from the database and followed there (services/catalog.ts). */
  catalog: Catalog;
  /** SWITCHYARD_SECRET_KEY, or null: what operators' TOTP secrets are sealed under (the catalog's credentials too). */
  secretKey: Buffer | null;
}

/** Reads the configuration file, with the provider types of the registry. */
export const loadConfig = (file?: string, env: NodeJS.ProcessEnv = process.env): Config =>
  load(PROVIDER_CATALOG, file, env);

/** Parses configuration text, with the provider types of the registry. */
export const parseConfig = (text: string, file: string | null = null, env: NodeJS.ProcessEnv = process.env): Config =>
  parse(PROVIDER_CATALOG, text, file, env);

export function createApp(o: {
  config: Config;
  db: Knex;
  log: Logger;
  redis?: Redis | null;
  env?: NodeJS.ProcessEnv;
}): App {
  const env = o.env ?? process.env;
  const redis = o.redis ?? null;
  const gateway = new Gateway(o.config);
  const billing = new Billing(o.db, o.config.billing, o.log);
  const stripe = stripeSettingsFromEnv(env);
  const token = env.ADMIN_TOKEN?.trim();
  if (token && token.length < 16) o.log.warn('ADMIN_TOKEN is shorter than 16 characters; use a long random value');
  const keys = new KeyCache(o.db, redis, o.log);
  keys.onChange((change) => billing.retire(change));
  const metricsToken = env.METRICS_TOKEN?.trim();
  const app: App = {
    config: o.config,
    db: o.db,
    log: o.log,
    redis,
    gateway,
    billing,
    refusals: new RefusalCounts(
      o.db,
      { flush_ms: o.config.billing.refusals_flush_ms, max_buckets: o.config.billing.refusals_max_buckets },
      o.log,
    ),
    metered: new Metered(gateway, billing, new RateLimits(o.config.limits, redis), o.log),
    keys,
    cards: stripe ? new CardPayments(stripe, o.db, o.log) : null,
    adminTokenHash: token ? sha256(token) : null,
    consoleLimits: new ConsoleLimits(o.config.console, redis),
    operatorLimits: new ConsoleLimits(o.config.console, redis, 'operator'),
    responses: new StoredResponses(o.db, o.config.responses.keep_ms, o.config.server.max_body_bytes),
    metrics: new Metrics(),
    mailer: new Mailer(o.config.mail, o.log),
    metricsTokenHash: metricsToken ? sha256(metricsToken) : null,
    oidc: o.config.admin.oidc ? new OidcSignIn(o.config.admin.oidc, o.log) : null,
    catalog: undefined as unknown as Catalog, // below: it applies what it loads to this app
    secretKey: readSecretKey(env.SWITCHYARD_SECRET_KEY),
  };
  app.catalog = new Catalog({ db: o.db, log: o.log, redis, env, config: o.config, apply: (c) => reload(app, c) });
  observe(app);
  observeGateway(app);
  return app;
}

/** How long a gateway replaced by a reload keeps serving the requests that started on it before it is closed. */
const RETIRED_GATEWAY_MS = 15 * 60_000;
const retired = new WeakMap<App, Gateway[]>();

/**
 * Applies a new configuration's models, routes, prices and providers (SIGHUP) without dropping a request: new
 * requests go to a new gateway, those in flight finish on the old one, which is closed later (or at stop). Limits,
 * billing, the console and the server's settings need a restart.
 */
export function reload(app: App, config: Config): void {
  const old = app.gateway;
  app.gateway = new Gateway(config);
  if (old.router.draining) app.gateway.drain();
  app.metered.gateway = app.gateway;
  app.config = { ...app.config, routing: config.routing, providers: config.providers, models: config.models };
  observeGateway(app);
  retired.set(app, [...(retired.get(app) ?? []), old]);
  setTimeout(() => {
    retired.set(
      app,
      (retired.get(app) ?? []).filter((g) => g !== old),
    );
    void old.close();
  }, RETIRED_GATEWAY_MS).unref();
}

/** Whether this process should get traffic: its database answers (within 1 s) and it is not shutting down. */
export async function readiness(
  app: App,
): Promise<{ ready: boolean; database: 'ok' | 'unreachable'; draining: boolean }> {
  const draining = app.gateway.router.draining;
  const database = (await databaseAnswers(app.db, 1_000)) ? 'ok' : 'unreachable';
  return { ready: !draining && database === 'ok', database, draining };
}

const BREAKER_POSITIONS: BreakerPosition[] = ['closed', 'open', 'half_open'];

/** What the metrics read from the services: settled requests, and when scraped, their state. */
function observe(app: App): void {
  const m = app.metrics;
  app.refusals.onDropped = (n) => m.refusalsDropped.inc(n);
  app.billing.onSettled = (s, cost) => {
    const route = s.provider ?? 'none';
    m.upstream.inc({ operation: s.endpoint, model: s.model, route, status: String(s.status) });
    if (s.latencyMs !== null) m.latency.observe({ model: s.model, route }, s.latencyMs / 1000);
    if (s.ttfbMs !== null) m.ttfb.observe({ model: s.model, route }, s.ttfbMs / 1000);
    m.used(s.model, s.usage);
    if (cost > 0) m.spend.inc({ model: s.model }, cost);
  };
  m.gauge(
    'switchyard_breaker_open',
    'Whether a route is skipped, cooling down after failures (1) or not (0); across workers, 1 if any skips it',
    ['route'],
    () =>
      app.gateway.router
        .breakerStates()
        .map((b) => ({ labels: { route: b.route }, value: b.state === 'open' ? 1 : 0 })),
    'max',
  );
  m.gauge(
    'switchyard_breaker_state',
    "Each route's breaker: 1 for the state it is in (closed, open: skipped while cooling down, half_open: one probe at a time), else 0; across workers, 1 if any is in it",
    ['route', 'state'],
    () =>
      app.gateway.router
        .breakerStates()
        .flatMap((b) =>
          BREAKER_POSITIONS.map((state) => ({ labels: { route: b.route, state }, value: b.state === state ? 1 : 0 })),
        ),
    'max',
  );
  m.gauge('switchyard_requests_in_flight', 'Admitted requests not yet settled (streams included)', [], () => [
    { value: app.billing.depth.inFlight },
  ]);
  m.gauge('switchyard_streams_active', 'Streams under way (admitted, answering, not yet settled)', [], () => [
    { value: app.billing.depth.streams },
  ]);
  m.gauge('switchyard_settlements_queued', 'Settled requests waiting to be written (write-behind)', [], () => [
    { value: app.billing.depth.queued },
  ]);
  m.gauge(
    'switchyard_db_pool_connections',
    'Database pool connections, by state (used, free, pending acquires)',
    ['state'],
    () => {
      const pool = (app.db.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number } })
        .pool;
      return pool
        ? [
            { labels: { state: 'used' }, value: pool.numUsed() },
            { labels: { state: 'free' }, value: pool.numFree() },
            { labels: { state: 'pending' }, value: pool.numPendingAcquires() },
          ]
        : [];
    },
  );
}

function observeGateway(app: App): void {
  app.gateway.router.onFailure = (route, cause) => app.metrics.upstreamErrors.inc({ route, cause });
}

interface Chores {
  timers: NodeJS.Timeout[];
  running: Set<Promise<unknown>>;
  /** Set at stop: a long prune ends after its current batch. */
  stopped: boolean;
}
const housekeeping = new WeakMap<App, Chores>();

/**
 * Hourly (and at start): deletes stored responses past `responses.keep_days`, idempotency keys past 24 h and usage
 * records past `usage.retention_days`. Every minute: mails the low-balance alerts that are due.
 */
function startHousekeeping(app: App): Chores {
  const chores: Chores = { timers: [], running: new Set(), stopped: false };
  const running = chores.running;
  const run = (what: string, work: () => Promise<unknown>) => {
    const p = work().catch((e) => app.log.warn({ err: (e as Error).message }, `could not ${what}`));
    running.add(p);
    void p.finally(() => running.delete(p));
  };
  const hourly = () => {
    run('delete expired stored responses', () => app.responses.purge());
    run('delete expired idempotency keys', () => purgeIdempotencyKeys(app.db));
    if (app.config.usage.retention_days > 0)
      run('delete usage records past usage.retention_days', () => pruneUsage(app, () => chores.stopped));
  };
  const minutely = () =>
    run('check low balances', () =>
      checkLowBalances(app.db, app.mailer, app.config.console.public_url, (e) =>
        app.log.warn({ err: e.message }, 'could not mail a low-balance alert; trying again in a minute'),
      ),
    );
  hourly();
  chores.timers.push(setInterval(hourly, 3_600_000).unref(), setInterval(minutely, 60_000).unref());
  return chores;
}

const pruning = new WeakSet<App>();

/**
 * Deletes the usage records past `usage.retention_days`, a thousand at a time with a pause between (db/queries/usage.ts):
 * one run at a time in this process; other processes may run theirs, a batch deleted twice deletes nothing.
 */
export async function pruneUsage(app: App, stopped: () => boolean = () => false): Promise<number> {
  if (pruning.has(app)) return 0;
  pruning.add(app);
  try {
    const before = Date.now() - app.config.usage.retention_days * 86_400_000;
    const n = await pruneUsageRecords(app.db, before, { stopped });
    if (n) app.log.info({ deleted: n, retention_days: app.config.usage.retention_days }, 'usage records pruned');
    return n;
  } finally {
    pruning.delete(app);
  }
}

/** Starts what runs in the background (the billing sweeper and renewals, the purge of old stored responses, the key-change channel). */
export async function startApp(app: App): Promise<void> {
  app.billing.start();
  app.refusals.start();
  app.mailer.announce();
  housekeeping.set(app, startHousekeeping(app));
  // Read now, so that the first sign-in need not wait; a provider that is down is logged, and tried again then.
  app.oidc?.configuration().catch(() => undefined);
  await app.keys.listen();
  await app.catalog.start(); // before the server listens: it serves the database's catalog from the first request
}

/** Stops it, once the server no longer takes requests: writes what billing queued, returns its leases. */
export async function stopApp(app: App): Promise<{ unwritten: number; leasesKept: number }> {
  const left = await app.billing.stop();
  await app.refusals.stop(); // the counts so far: a refusal is counted once it was answered
  const chores = housekeeping.get(app);
  if (chores) chores.stopped = true;
  chores?.timers.forEach(clearInterval);
  await Promise.all(chores?.running ?? []); // nothing touches the database after stop
  app.keys.close();
  app.catalog.close();
  await Promise.all([app.gateway, ...(retired.get(app) ?? [])].map((g) => g.close()));
  return left;
}
