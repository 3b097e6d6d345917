/**
 * Process entry for `switchyard serve`: configuration, database, the app's services, HTTP server, and the signals:
 * SIGTERM / SIGINT drain (new /v1 requests get 503 and /readyz fails; requests and streams in flight finish within
 * `server.shutdown_grace_ms`; the listener stays open at least `server.shutdown_delay_ms`; holds and leases are
 * settled; exit 0), SIGHUP reloads the configuration's models, routes, prices and providers (an invalid file is
 * refused, with where it is wrong, and the old one kept).
 */
import cluster from 'node:cluster';
import type { Server } from '@hapi/hapi';
import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from './config';
import { compactAfterStart, releaseYoungGeneration, steadyOldGeneration } from './heap';
import { formatUsd } from './money';
import { connect, migrate } from './db';
import { buildServer } from './http/server';
import { createLogger } from './log';
import { connectRedis } from './redis';
import { createApp, loadConfig, reload, startApp, stopApp, type App } from './services/app';
import { startTracing, stopTracing } from './tracing';

export interface Started {
  app: App;
  server: Server;
  stop: () => Promise<void>;
  /** Reads the configuration file again and applies it; false (and a log line) when it is invalid. */
  reload: () => boolean;
}

export async function start(
  opts: { port?: number; host?: string; configFile?: string; databaseUrl?: string; migrate?: boolean } = {},
): Promise<Started> {
  const log = createLogger();
  const config = loadConfig(opts.configFile);
  // Before any request: with an OTLP endpoint configured the SDK is loaded and started; without one, never loaded.
  if (await startTracing())
    log.info({ service: process.env.OTEL_SERVICE_NAME ?? 'switchyard' }, 'exporting traces (OTLP)');
  const db = connect(opts.databaseUrl);
  if (opts.migrate !== false) await migrate(db);
  const redis = await connectRedis(process.env.REDIS_URL, log);
  const app = await startServices(config, db, log, redis);
  const server = await buildServer(app, { port: opts.port, host: opts.host });
  await server.start();
  releaseYoungGeneration(); // started: from here traffic sizes the young generation (heap.ts)
  steadyOldGeneration(); // no full collection every half second at low rates after an idle spell (heap.ts)
  compactAfterStart(); // start-up's garbage collected and its pages given back (heap.ts)
  if (!cluster.isWorker) logPrices(log, config); // with workers, the primary says it once (cli.ts)
  const { source, revision } = app.catalog;
  const models = app.config.models.length;
  log.info({ url: server.info.uri, config: config.file, catalog: source, revision, models }, 'switchyard listening');
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      const { shutdown_grace_ms: grace, shutdown_delay_ms: delay } = app.config.server;
      log.info({ grace_ms: grace, delay_ms: delay }, 'shutting down: new requests get 503, requests in flight finish');
      app.gateway.drain();
      // Still listening while paid requests and streams finish: new /v1 requests get a 503 (clients and load
      // balancers go elsewhere) and /readyz says so; and for at least `shutdown_delay_ms`, so that a balancer whose
      // health checks have not yet seen /readyz fail gets a 503 rather than a refused or dropped connection. Then
      // Hapi stops, with what is left of the grace period.
      const signalled = Date.now();
      const deadline = signalled + grace;
      await Promise.race([app.billing.settled(), sleep(grace)]);
      await sleep(signalled + delay - Date.now());
      await server.stop({ timeout: Math.max(0, deadline - Date.now()) });
      const left = await stopApp(app);
      redis?.disconnect();
      await db.destroy();
      await stopTracing(); // the last spans (settlements written just now) are flushed to the collector
      if (left.unwritten || left.leasesKept)
        log.warn(
          left,
          'stopped; what is left is settled by the sweeper of another process (or this one at its next start)',
        );
      else log.info('stopped: settlements written, leases returned');
    })());
  return { app, server, stop, reload: reloader(app, log, opts.configFile ?? config.file ?? undefined) };
}

/**
 * SIGHUP: reads the file's providers and models again and serves them; false (and a log line) when it is invalid.
 * With `catalog: database` the file seeded the database once, and the database's catalog is followed: it is looked
 * at again instead.
 */
function reloader(app: App, log: Logger, file: string | undefined): () => boolean {
  return () => {
    if (app.catalog.source === 'database') {
      log.info('catalog: database: providers and models are followed in the database; the file is not read again');
      void app.catalog.poll();
      return true;
    }
    try {
      const next = loadConfig(file);
      reload(app, next);
      if (!cluster.isWorker) logPrices(log, next);
      log.info({ config: next.file, models: next.models.length }, 'configuration reloaded');
      return true;
    } catch (e) {
      log.error({ err: (e as Error).message }, 'configuration not reloaded (the old one stays)');
      return false;
    }
  };
}

/**
 * The app's services, started. When they cannot start (a catalog that cannot be served: no key, a wrong one, an
 * invalid revision), what did start is stopped again: nothing may keep the process up.
 */
async function startServices(config: Config, db: Knex, log: Logger, redis: Redis | null): Promise<App> {
  let app: App | undefined;
  try {
    app = createApp({ config, db, log, redis });
    await startApp(app);
    return app;
  } catch (e) {
    if (app) await stopApp(app).catch(() => undefined);
    redis?.disconnect();
    await db.destroy();
    throw e;
  }
}

/**
 * Once per configuration read: the cache prices derived from a provider's multipliers (info), and those set below
 * what the provider bills (a warning: allowed, since some operators sell at a loss on purpose).
 */
export function logPrices(log: Logger, config: Config): void {
  const usd = (micros: number) => formatUsd(micros).replace(/\.?0+$/, '');
  for (const n of config.priceNotices) {
    const at = {
      model: n.model,
      class: n.class,
      ...(n.tier !== undefined ? { above_prompt_tokens: n.tier } : {}),
      usd_per_million: usd(n.price),
      provider: n.provider,
      provider_bills: usd(n.billed),
    };
    const price = `price.${n.class} of ${n.model}${n.tier !== undefined ? ` above ${n.tier} prompt tokens` : ''}`;
    if (n.kind === 'derived')
      log.info(at, `${price} not set: ${usd(n.price)} USD per million tokens, what ${n.provider} bills`);
    else
      log.warn(
        at,
        `${price} is below what ${n.provider} bills (${usd(n.billed)} USD per million tokens): its requests are sold at a loss`,
      );
  }
}

/** Resolves after `ms` (at once when it is not positive); its timer does not keep the process up. */
const sleep = (ms: number) => new Promise<void>((r) => (ms > 0 ? setTimeout(r, ms).unref() : r()));

export function stopOnSignals(started: Pick<Started, 'stop' | 'reload'>): void {
  // A second signal during the drain changes nothing (stop() is the same promise); it does not kill the process.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      started.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
  process.on('SIGHUP', () => void started.reload());
}
