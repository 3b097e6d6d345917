/**
 * The embedded database's driver, chosen by the Node that runs the gateway. better-sqlite3 12 (`better-sqlite3`) is
 * the one that runs on Node 20; from Node 24.19 on, an addon built on Node's own `node::ObjectWrap`, as 12 is, aborts
 * the process when a garbage-collected statement is freed (`Assertion failed: (env) != nullptr` in
 * `RemoveEnvironmentCleanupHook`, nodejs/node#65446; WiseLibs/better-sqlite3#1515 closed without a fix).
 * better-sqlite3 13 (`better-sqlite3-napi`, an npm alias) is built on Node-API instead and ships its addon for every
 * Node from 22 on, but needs 22: on Node 20 it crashes the process. Both are installed; the running Node picks one.
 */
import type { Knex } from 'knex';

/** The first Node major better-sqlite3 13 runs on. */
const NAPI_FROM_MAJOR = 22;

/** The npm package this Node loads: `better-sqlite3` (12) on Node 20, `better-sqlite3-napi` (13) from 22 on. */
export function sqlitePackage(nodeVersion = process.versions.node): string {
  return Number(nodeVersion.split('.')[0]) >= NAPI_FROM_MAJOR ? 'better-sqlite3-napi' : 'better-sqlite3';
}

/** better-sqlite3's `Database` class, from the package this Node can run. */
export function sqliteDriver(): unknown {
  // which package is known only at run time
  return require(sqlitePackage());
}

let client: typeof Knex.Client | undefined;

/**
 * knex's better-sqlite3 client (its `driverName` stays 'better-sqlite3'), loading the driver chosen above. Made on
 * first use: knex's SQLite dialect is 16 modules, which a gateway on MySQL or PostgreSQL never needs.
 */
export function sqliteClient(): typeof Knex.Client {
  if (client) return client;
  // knex exports no type for its dialects' classes
  const Base = require('knex/lib/dialects/better-sqlite3') as typeof Knex.Client;
  client = class SqliteClient extends Base {
    _driver(): unknown {
      return sqliteDriver();
    }
  };
  return client;
}
