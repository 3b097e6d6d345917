/** Starts a real gateway on a loopback port against the test database, with a configuration written for the test. */
import crypto from 'node:crypto';
import type { Server } from '@hapi/hapi';
import pino from 'pino';
import { createAccount } from '../../src/accounts/accounts';
import { createKey, type NewKey } from '../../src/accounts/keys';
import { connect } from '../../src/db';
import { buildServer } from '../../src/http/server';
import { createApp, parseConfig, startApp, stopApp, type App } from '../../src/services/app';
import type { Mail } from '../../src/services/mailer';

export interface TestGateway {
  app: App;
  server: Server;
  /** http://127.0.0.1:PORT */
  url: string;
  close(): Promise<void>;
  /** A new account (unique email) with `credits` micro-USD and one key; returns the secret key. */
  newKey(k?: Partial<NewKey>, credits?: number): Promise<{ secret: string; accountId: number; keyId: number }>;
  /** Resolves once every request in flight has ended and its settlement is written (settlements are written in batches). */
  settled(): Promise<void>;
  /** Every mail the gateway sent (also sent on to its SMTP server, if it has one). */
  mails: Mail[];
}

/** The mails of each running test gateway, by its URL: the console helper confirms new addresses with them. */
export const MAILBOXES = new Map<string, Mail[]>();

/** The token of the newest link to `path` (`/console/verify`, `/console/reset`) mailed to `to`. */
export function mailedToken(mails: Mail[], to: string, path: string): string | null {
  for (let i = mails.length - 1; i >= 0; i--) {
    const m = mails[i];
    if (m.to !== to) continue;
    const found = new RegExp(`${path.replace(/\//g, '\\/')}\\?token=([A-Za-z0-9_-]+)`).exec(m.text);
    if (found) return found[1];
  }
  return null;
}

/** Every line the gateway logs (JSON, as pino writes it), from the debug level up: for tests that grep the log. */
export class LogLines {
  readonly lines: string[] = [];
  write(line: string): void {
    this.lines.push(line);
  }
  text(): string {
    return this.lines.join('');
  }
}

/**
 * `env` is read for the configuration's `${VAR}`s and by the app (ADMIN_TOKEN, STRIPE_SECRET_KEY,
 * STRIPE_WEBHOOK_SECRET, STRIPE_API_BASE, SWITCHYARD_SECRET_KEY). `logTo` captures the gateway's log.
 */
export async function startGateway(
  configYaml: string,
  env: NodeJS.ProcessEnv = process.env,
  o: { logTo?: LogLines } = {},
): Promise<TestGateway> {
  const config = parseConfig(configYaml, 'test.yaml', env);
  const db = connect(process.env.DATABASE_URL);
  const log = o.logTo ? pino({ level: 'debug' }, o.logTo) : pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const app = createApp({ config, db, log, env });
  const mails: Mail[] = [];
  const send = app.mailer.send.bind(app.mailer);
  app.mailer.send = async (m) => {
    mails.push(m);
    await send(m);
  };
  await startApp(app);
  const server = await buildServer(app, { port: 0, host: '127.0.0.1' });
  await server.start();
  const url = `http://127.0.0.1:${server.info.port}`;
  MAILBOXES.set(url, mails);
  return {
    app,
    server,
    url,
    mails,
    async close() {
      MAILBOXES.delete(url);
      await server.stop({ timeout: 1000 });
      await stopApp(app);
      await db.destroy();
    },
    async newKey(k = {}, credits = 10_000_000) {
      const account = await createAccount(db, `user-${crypto.randomUUID()}@example.com`, credits);
      const { key, secret } = await createKey(db, { accountId: account.id, ...k });
      return { secret, accountId: account.id, keyId: key.id };
    },
    settled: () => app.billing.settled(),
  };
}
