/** Process entry for `switchyard serve`: configuration, database, gateway, HTTP server, graceful shutdown. */
import type { Server } from '@hapi/hapi';
import type { App } from './app';
import { loadConfig } from './config';
import { connect, migrate } from './db';
import { Gateway } from './gateway/gateway';
import { Billing } from './billing/billing';
import { RateLimits, connectRedis } from './billing/limits';
import { createLogger } from './log';
import { buildServer } from './server';

export interface Started {
  app: App;
  server: Server;
  stop: () => Promise<void>;
}

export async function start(opts: { port?: number; host?: string; configFile?: string; databaseUrl?: string } = {}): Promise<Started> {
  const log = createLogger();
  const config = loadConfig(opts.configFile);
  const db = connect(opts.databaseUrl);
  await migrate(db);
  const gateway = new Gateway(config);
  const redis = await connectRedis(process.env.REDIS_URL, log);
  const billing = new Billing(db, config.billing, new RateLimits(config.limits, redis, log), log);
  billing.start();
  const app: App = { db, config, gateway, billing, log };
  const server = await buildServer(app, { port: opts.port, host: opts.host, redis });
  await server.start();
  log.info({ url: server.info.uri, config: config.file, models: config.models.length }, 'switchyard listening');
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      log.info('shutting down: finishing requests in flight');
      gateway.drain();
      await server.stop({ timeout: 30_000 });
      billing.stop();
      await gateway.close();
      redis?.disconnect();
      await db.destroy();
    })());
  return { app, server, stop };
}

export function stopOnSignals(stop: () => Promise<void>): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}
