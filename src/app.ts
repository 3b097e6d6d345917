/** What every request handler can reach: the database, the configuration, the gateway and the logger. */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from './config';
import type { Gateway } from './gateway/gateway';
import type { Billing } from './billing/billing';

export interface App {
  db: Knex;
  config: Config;
  gateway: Gateway;
  billing: Billing;
  log: Logger;
}
