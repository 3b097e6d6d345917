/** Starts a real gateway on a loopback port against the test database, with a configuration written for the test. */
import crypto from 'node:crypto';
import type { Server } from '@hapi/hapi';
import pino from 'pino';
import type { App } from '../../src/app';
import { createAccount } from '../../src/accounts/accounts';
import { createKey, type NewKey } from '../../src/accounts/keys';
import { parseConfig } from '../../src/config';
import { connect } from '../../src/db';
import { Gateway } from '../../src/gateway/gateway';
import { Billing } from '../../src/billing/billing';
import { RateLimits } from '../../src/billing/limits';
import { buildServer } from '../../src/server';

export interface TestGateway {
  app: App;
  server: Server;
  /** http://127.0.0.1:PORT */
  url: string;
  close(): Promise<void>;
  /** A new account (unique email) with `credits` micro-USD and one key; returns the secret key. */
  newKey(k?: Partial<NewKey>, credits?: number): Promise<{ secret: string; accountId: number; keyId: number }>;
}

/**
 * `env` is read for the configuration's `${VAR}`s and by the server (ADMIN_TOKEN, STRIPE_SECRET_KEY,
 * STRIPE_WEBHOOK_SECRET, STRIPE_API_BASE).
 */
export async function startGateway(configYaml: string, env: NodeJS.ProcessEnv = process.env): Promise<TestGateway> {
  const config = parseConfig(configYaml, 'test.yaml', env);
  const db = connect(process.env.DATABASE_URL);
  const gateway = new Gateway(config);
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const billing = new Billing(db, config.billing, new RateLimits(config.limits, null, log), log);
  billing.start();
  const app: App = { db, config, gateway, billing, log };
  const server = await buildServer(app, { port: 0, host: '127.0.0.1', env });
  await server.start();
  return {
    app,
    server,
    url: `http://127.0.0.1:${server.info.port}`,
    async close() {
      await server.stop({ timeout: 1000 });
      billing.stop();
      await gateway.close();
      await db.destroy();
    },
    async newKey(k = {}, credits = 10_000_000) {
      const account = await createAccount(db, `user-${crypto.randomUUID()}@example.com`, credits);
      const { key, secret } = await createKey(db, { accountId: account.id, ...k });
      return { secret, accountId: account.id, keyId: key.id };
    },
  };
}
