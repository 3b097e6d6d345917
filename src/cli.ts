/**
 * The `switchyard` command: a table of commands over the same services the admin API uses (services/admin.ts) and
 * the same presenters (services/views.ts). Every command prints JSON on stdout (for scripts); failures print
 * {"error": "..."} on stderr and exit 1 (2 for a misused command). The help is made from the table.
 */
import './startup'; // first: the young generation stays small while the modules load (heap.ts)
import cluster from 'node:cluster';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import {
  AccountError,
  createAccount,
  getAccount,
  listAccounts,
  setLowBalance,
  setPasswordHash,
  type Account,
} from './accounts/accounts';
import { CHANNEL, type KeyChange } from './accounts/keyCache';
import { createOperator, disableOperator, listOperators, OperatorError } from './accounts/operators';
import { hashPassword, passwordProblem } from './accounts/passwords';
import {
  BUDGET_PERIODS,
  createKey,
  getKey,
  KeyError,
  listKeys,
  SCOPES,
  type ApiKey,
  type BudgetPeriod,
  type KeyChanges,
  type Scope,
} from './accounts/keys';
import { MAX_BATCH } from './billing/redemption';
import { verifyLedger } from './billing/verify';
import { ConfigError, MIN_RETENTION_DAYS } from './config';
import { releaseYoungGeneration } from './heap';
import { connect, migrate } from './db';
import { DuplicateLedgerEntry, entries } from './db/ledger';
import { pruneUsageRecords, usageRecords } from './db/queries/usage';
import { createLogger } from './log';
import { CLUSTER_ENV, gatherWorkerMetrics } from './metrics';
import { logPrices, start, stopOnSignals } from './main';
import { loadConfig } from './services/app';
import { formatUsd, parseUsd } from './money';
import { connectRedis } from './redis';
import { SecretKeyError } from './secrets';
import { createCodesOnce, grantOnce, setKeyState, setStatus } from './services/admin';
import { listAudit, recordAudit, snapshot } from './services/audit';
import { exportCatalog, importCatalog, rotateSecret } from './services/catalog';
import { CatalogError } from './services/catalogDocument';
import { changeKey } from './services/consoleKeys';
import { farmingReport, revokeFreeCredits } from './services/farming';
import { IdempotencyMismatch } from './services/idempotency';
import { adminAccountView, keyView, operatorView } from './services/views';

class UsageError extends Error {}

interface Opts {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

interface Context {
  db: Knex;
  o: Opts;
  /** Tells running gateways that a key or an account changed (through Redis when REDIS_URL is set). */
  announce: (change: KeyChange) => void;
}

interface Command {
  /** Arguments and options, as the help shows them. */
  usage: string;
  note?: string;
  /** It changes nothing: not recorded in the audit log (every other command is, once it succeeded). */
  reads?: true;
  /** It writes its audit record itself, in the transaction of its change (the catalog's: live only with its record). */
  audits?: true;
  run(ctx: Context): Promise<unknown>;
}

const COMMANDS: Record<string, Command> = {
  migrate: { usage: '', reads: true, run: async () => ({ migrated: true }) },
  serve: {
    usage: '[--port P] [--host H] [--workers N]',
    note: 'also PORT, HOST, WORKERS; default 127.0.0.1:8080, 1 process',
    run: async () => undefined,
  },
  'accounts create': {
    usage: '--email E [--credits USD]',
    run: async ({ db, o }) =>
      showAccount(
        db,
        await createAccount(db, required(o, 'email'), o.values.credits ? parseUsd(String(o.values.credits)) : 0),
      ),
  },
  'accounts show': {
    usage: 'ID',
    reads: true,
    note: 'balance in USD and micro-USD, keys',
    run: async ({ db, o }) => showAccount(db, await account(db, o.positionals[0])),
  },
  'accounts list': {
    usage: '',
    reads: true,
    run: async ({ db }) => ({ accounts: (await listAccounts(db)).map(adminAccountView) }),
  },
  'accounts disable': {
    usage: 'ID',
    note: 'its keys and console sessions stop working (within 2 s everywhere)',
    run: async ({ db, o, announce }) =>
      adminAccountView(await setStatus(db, announce, id(o.positionals[0], 'ID'), 'disabled')),
  },
  'accounts enable': {
    usage: 'ID',
    run: async ({ db, o, announce }) =>
      adminAccountView(await setStatus(db, announce, id(o.positionals[0], 'ID'), 'active')),
  },
  'accounts alert': {
    usage: 'ID (--usd N | --off)',
    note: 'mail the account once when its balance falls below N USD (again after it is back above); --off: no alert',
    run: async ({ db, o }) => {
      const accountId = id(o.positionals[0], 'ID');
      if (!o.values.off && o.values.usd === undefined) throw new UsageError('give --usd N or --off');
      const micros = o.values.off ? null : parseUsd(String(o.values.usd));
      if (micros !== null && micros < 0) throw new UsageError('--usd must be >= 0');
      const a = await setLowBalance(db, accountId, micros);
      return { id: a.id, low_balance_usd: a.low_balance_micros === null ? null : formatUsd(a.low_balance_micros) };
    },
  },
  'keys create': {
    usage:
      '--account ID [--name N] [--quota USD] [--models a,b] [--scopes chat,embeddings] [--disabled] [--rpm N] [--tpm N] [--expires DATE] [--budget USD --period day|week|month]',
    note: 'the key is printed once; per-key limits default to the configuration',
    run: async ({ db, o }) => {
      const scopes = list(o.values.scopes) as Scope[] | undefined;
      if (scopes?.some((s) => !SCOPES.includes(s)))
        throw new UsageError(`--scopes takes a list of ${SCOPES.join(', ')}`);
      const { key, secret } = await createKey(db, {
        accountId: id(required(o, 'account'), '--account'),
        name: (o.values.name as string | undefined) ?? null,
        quotaMicros: o.values.quota ? parseUsd(String(o.values.quota)) : null,
        models: list(o.values.models) ?? null,
        scopes,
        enabled: !o.values.disabled,
        rpmLimit: o.values.rpm === undefined ? null : count(String(o.values.rpm), '--rpm'),
        tpmLimit: o.values.tpm === undefined ? null : count(String(o.values.tpm), '--tpm'),
        expiresAt: o.values.expires === undefined ? null : future(String(o.values.expires), '--expires'),
        budget: budgetOption(o),
      });
      return { ...keyJson(key), key: secret, note: 'This key is shown once; only its hash is stored.' };
    },
  },
  'keys show': {
    reads: true,
    usage: 'ID',
    run: async ({ db, o }) => {
      const key = await getKey(db, id(o.positionals[0], 'ID'));
      if (!key) throw new KeyError(`no key ${o.positionals[0]}`);
      return keyJson(key);
    },
  },
  'keys update': {
    usage: 'ID [--expires DATE | --expires never] [--budget USD --period day|week|month | --no-budget]',
    note: 'changes the expiry or the budget of a key (running gateways see it within 2 s)',
    run: async ({ db, o, announce }) => {
      const keyId = id(o.positionals[0], 'ID');
      const changes: KeyChanges = {};
      if (o.values.expires !== undefined)
        changes.expiresAt = o.values.expires === 'never' ? null : future(String(o.values.expires), '--expires');
      if (o.values['no-budget'] && (o.values.budget !== undefined || o.values.period !== undefined))
        throw new UsageError('--no-budget goes alone, without --budget or --period');
      if (o.values['no-budget']) changes.budget = null;
      else if (o.values.budget !== undefined || o.values.period !== undefined) changes.budget = budgetOption(o);
      if (!Object.keys(changes).length) throw new UsageError('give --expires, --budget with --period, or --no-budget');
      const key = await changeKey(db, keyId, changes);
      if (!key) throw new KeyError(`no key ${keyId}`);
      announce({ keyId });
      return keyJson(key);
    },
  },
  'keys disable': {
    usage: 'ID',
    run: async ({ db, o, announce }) => keyJson(await setKeyState(db, announce, id(o.positionals[0], 'ID'), false)),
  },
  'keys enable': {
    usage: 'ID',
    run: async ({ db, o, announce }) => keyJson(await setKeyState(db, announce, id(o.positionals[0], 'ID'), true)),
  },
  'credits grant': {
    usage: '--account ID --usd N [--note T] [--idempotency-key K]',
    note: 'what the account owes is paid first; a negative N removes credits (an adjustment), never below zero; a retry with the same key credits nothing more',
    run: async ({ db, o, announce }) => {
      const accountId = id(required(o, 'account'), '--account');
      const amount = parseUsd(required(o, 'usd'));
      if (amount === 0) throw new UsageError('--usd must not be 0');
      const done = await grantOnce(
        db,
        idempotencyOption(o),
        accountId,
        amount,
        (o.values.note as string | undefined) ?? null,
      );
      if (done.reactivated) announce({ accountId }); // its debt paid: the account is active again
      return {
        account_id: accountId,
        granted_usd: formatUsd(amount),
        balance_usd: formatUsd(done.balance_after),
        balance_micros: done.balance_after,
        ledger_id: done.ledger_id,
      };
    },
  },
  'credits revoke': {
    usage: '--account ID',
    note: 'takes back the sign-up and referral credits the account has not spent (never paid money)',
    run: async ({ db, o }) => {
      const accountId = id(required(o, 'account'), '--account');
      const done = await revokeFreeCredits(db, accountId);
      if (!done) throw new AccountError(`no account ${accountId}`);
      return {
        account_id: accountId,
        revoked_usd: formatUsd(done.revoked_micros),
        balance_usd: formatUsd(done.balance_micros),
      };
    },
  },
  farming: {
    usage: '',
    reads: true,
    note: 'referrals per referrer, accounts per registration network, unconfirmed accounts',
    run: async ({ db }) => farmingReport(db),
  },
  'codes create': {
    usage: '--count N --usd X [--note T] [--idempotency-key K]',
    note: 'single-use top-up codes, printed once (again to a retry with the same key)',
    run: async ({ db, o }) => {
      const n = count(required(o, 'count'), '--count');
      if (n < 1 || n > MAX_BATCH) throw new UsageError(`--count must be between 1 and ${MAX_BATCH}`);
      const amount = parseUsd(required(o, 'usd'));
      if (amount <= 0) throw new UsageError('--usd must be more than 0');
      const codes = await createCodesOnce(
        db,
        idempotencyOption(o),
        n,
        amount,
        (o.values.note as string | undefined) ?? null,
        `cli:${systemUser()}`,
      );
      return {
        batch: codes[0].id,
        codes: codes.map((c) => ({ id: c.id, code: c.code, amount_usd: formatUsd(c.amount_micros) })),
        note: 'These codes are shown once; only their hashes are stored.',
      };
    },
  },
  'operators create': {
    usage: '--email E --role owner|admin|support|viewer',
    note: 'password from SWITCHYARD_OPERATOR_PASSWORD, or a generated one printed once; TOTP is enrolled at first sign-in',
    run: async ({ db, o }) => {
      const email = required(o, 'email');
      const given = process.env.SWITCHYARD_OPERATOR_PASSWORD;
      const password = given || crypto.randomBytes(18).toString('base64url');
      const weak = given ? await passwordProblem(password, email) : null; // a generated one is 144 random bits
      if (weak) throw new UsageError(`SWITCHYARD_OPERATOR_PASSWORD: ${weak}`);
      const made = operatorView(await createOperator(db, email, required(o, 'role'), await hashPassword(password)));
      // A password the operator chose is theirs to know: only a generated one is printed (this once).
      return given ? made : { ...made, password, note: 'This password is shown once; it is not stored.' };
    },
  },
  'operators list': {
    usage: '',
    reads: true,
    run: async ({ db }) => ({ operators: (await listOperators(db)).map(operatorView) }),
  },
  'operators disable': {
    usage: 'ID',
    note: 'its sessions end at once',
    run: async ({ db, o }) => operatorView(await disableOperator(db, id(o.positionals[0], 'ID'))),
  },
  'ledger verify': {
    reads: true,
    usage: '',
    note: 'exit 1 when a balance differs from its ledger; shortfalls are listed',
    run: async ({ db }) => {
      const result = await verifyLedger(db);
      if (!result.ok) process.exitCode = 1;
      for (const s of result.shortfalls) {
        process.stderr.write(
          `warning: account ${s.account_id}: upstreams billed ${formatUsd(s.uncovered_micros)} USD more than it could pay (${s.requests} requests)\n`,
        );
      }
      return result;
    },
  },
  'ledger list': {
    reads: true,
    usage: '--account ID [--limit N]',
    run: async ({ db, o }) => {
      const rows = await entries(db, id(required(o, 'account'), '--account'), limit(o));
      return {
        entries: rows.map((e) => ({
          ...e,
          amount_usd: formatUsd(e.amount_micros),
          created_at: new Date(e.created_at).toISOString(),
        })),
      };
    },
  },
  'audit list': {
    reads: true,
    usage: '[--action A] [--target account:ID|key:ID] [--limit N]',
    note: 'state-changing operator actions (admin API and CLI), newest first, secrets masked',
    run: async ({ db, o }) => ({
      audit: await listAudit(db, {
        limit: o.values.limit !== undefined ? count(String(o.values.limit), '--limit') : 50,
        action: o.values.action as string | undefined,
        target: o.values.target as string | undefined,
      }),
    }),
  },
  'usage list': {
    reads: true,
    usage: '[--account ID] [--key ID] [--limit N]',
    run: async ({ db, o }) => {
      const filter = { accountId: optionalId(o, 'account'), keyId: optionalId(o, 'key') };
      const rows = await usageRecords(db, filter, { limit: limit(o) });
      return {
        usage: rows.map(({ id: _id, ...r }) => ({
          ...r,
          cost_usd: formatUsd(r.cost_micros),
          created_at: new Date(r.created_at).toISOString(),
        })),
      };
    },
  },
  'usage prune': {
    usage: '[--days N]',
    note: 'deletes usage records older than N days (default usage.retention_days), 1000 at a time; rollups and ledger stay',
    run: async ({ db, o }) => {
      const days =
        o.values.days !== undefined ? count(String(o.values.days), '--days') : loadConfig().usage.retention_days;
      if (days === 0)
        return { deleted: 0, retention_days: 0, note: 'usage.retention_days is 0: records are kept forever' };
      if (days < MIN_RETENTION_DAYS)
        throw new UsageError(
          `--days must be at least ${MIN_RETENTION_DAYS}: a key's monthly budget is recounted from the usage records of its month`,
        );
      const before = Date.now() - days * 86_400_000;
      return {
        deleted: await pruneUsageRecords(db, before, { pauseMs: 10 }),
        retention_days: days,
        before: new Date(before).toISOString(),
      };
    },
  },
  'catalog export': {
    usage: '[--file F]',
    reads: true,
    note: 'the catalog in the database as YAML (stdout, or F); credentials are left out (kept in the database)',
    run: async ({ db, o }) => {
      const { yaml, revision } = await exportCatalog(db, process.env);
      if (typeof o.values.file !== 'string') return void process.stdout.write(yaml);
      fs.writeFileSync(o.values.file, yaml, { mode: 0o600 });
      return { file: o.values.file, revision };
    },
  },
  'catalog import': {
    usage: '--file F',
    audits: true,
    note: "F's providers and models become the catalog's newest revision (checked first; a credential F leaves out is kept)",
    run: async ({ db, o }) => {
      const file = required(o, 'file');
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (e) {
        throw new UsageError(`${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? e})`);
      }
      return importCatalog(db, loadConfig(), text, file, { env: process.env, audit: cliAudit('catalog import') });
    },
  },
  'catalog rotate-secret': {
    usage: '',
    audits: true,
    note: "re-encrypts the stored credentials and operators' TOTP secrets from SWITCHYARD_SECRET_KEY to SWITCHYARD_NEW_SECRET_KEY (one transaction)",
    run: async ({ db }) => rotateSecret(db, process.env, cliAudit('catalog rotate-secret')),
  },
  demo: {
    usage: '',
    note: 'a demo account with 10 USD, a new key and a new console password',
    run: async ({ db }) => {
      const email = 'demo@switchyard.local';
      const existing = (await listAccounts(db, { email })).find((a) => a.email === email);
      const a = existing ?? (await createAccount(db, email, parseUsd('10')));
      const { key, secret } = await createKey(db, { accountId: a.id, name: 'demo' });
      // A new random password at each run, so the console can be tried as the demo account (and no fixed password
      // is left on a gateway that is later exposed).
      const password = crypto.randomBytes(12).toString('base64url');
      await setPasswordHash(db, a.id, await hashPassword(password));
      return { account: adminAccountView((await getAccount(db, a.id))!), key: secret, key_id: key.id, password };
    },
  },
};

const OPTIONS = [
  'days',
  'email',
  'credits',
  'account',
  'name',
  'quota',
  'models',
  'scopes',
  'usd',
  'rpm',
  'tpm',
  'limit',
  'key',
  'note',
  'count',
  'idempotency-key',
  'expires',
  'budget',
  'period',
  'action',
  'target',
  'role',
  'file',
] as const;

const HELP = `switchyard — OpenAI-compatible model gateway

${Object.entries(COMMANDS)
  .map(([name, c]) => `  switchyard ${`${name} ${c.usage}`.trim()}${c.note ? `\n      ${c.note}` : ''}`)
  .join('\n')}

Environment: DATABASE_URL (sqlite:<path> or mysql://user:pass@host:port/db; default sqlite:./data/switchyard.db),
SWITCHYARD_CONFIG (default ./switchyard.yaml), REDIS_URL, LOG_LEVEL.`;

export async function main(argv: string[]): Promise<void> {
  try {
    await run(argv);
  } catch (e) {
    const usage = e instanceof UsageError;
    const known =
      usage ||
      e instanceof AccountError ||
      e instanceof KeyError ||
      e instanceof OperatorError ||
      e instanceof ConfigError ||
      e instanceof SecretKeyError ||
      e instanceof CatalogError ||
      e instanceof DuplicateLedgerEntry ||
      e instanceof RangeError ||
      e instanceof IdempotencyMismatch;
    process.stderr.write(
      `${JSON.stringify({ error: known ? (e as Error).message : `unexpected failure: ${(e as Error).message}` })}\n`,
    );
    if (usage) process.stderr.write(`\n${HELP}\n`);
    process.exitCode = usage ? 2 : 1;
  }
}

async function run(argv: string[]): Promise<void> {
  const [group, action, ...rest] = argv;
  if (!group || group === 'help' || group === '--help' || group === '-h') {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  if (group === 'serve') return serve([action, ...rest].filter((a) => a !== undefined));
  releaseYoungGeneration(); // the modules are loaded: the command's own work sizes it (serve: once it listens)
  const name = `${group}${action && !action.startsWith('-') ? ` ${action}` : ''}`;
  const command = COMMANDS[name];
  if (!command) throw new UsageError(`unknown command: ${name}`);
  const o = options(name.includes(' ') ? rest : [action, ...rest].filter((a) => a !== undefined));
  const db = connect(undefined, { queryTimeoutMs: 0 }); // a report on a large database may take long (and can be interrupted)
  const redis = await connectRedis(process.env.REDIS_URL, createLogger('error'));
  const announced: Promise<unknown>[] = [];
  try {
    await migrate(db);
    // The connection may still be opening (it refuses commands until then): each announcement waits for it.
    const announce = (change: KeyChange) =>
      void (
        redis &&
        announced.push(
          whenReady(redis)
            .then(() => redis.publish(CHANNEL, JSON.stringify(change)))
            .catch(() => undefined),
        )
      );
    const acted = command.reads ? null : cliTarget(name, o);
    const before = command.reads ? null : await snapshot(db, acted);
    const result = await command.run({ db, o, announce });
    if (!command.reads && !command.audits) {
      const made = created(name, result); // what it made is its target, and had no state before
      const target = made ?? acted;
      const after = target ? await snapshot(db, target) : result;
      const entry = { actor: `cli:${systemUser()}`, address: 'local', action: name, target };
      await recordAudit(db, { ...entry, before: made ? null : before, after });
    }
    if (result !== undefined) print(result); // `catalog export` to stdout writes YAML itself
  } finally {
    await Promise.all(announced);
    redis?.disconnect(); // not quit(): a connection still opening refuses it and would keep the process alive
    await db.destroy();
  }
}

/** A command's audit record, as the CLI's are: by the system user, from `local`, of no single target. */
const cliAudit = (action: string) => ({ actor: `cli:${systemUser()}`, address: 'local', action, target: null });

/** What a command acts on, for the audit log: `--account ID`, or the ID of an `accounts`, `keys` or `operators` command. */
function cliTarget(name: string, o: Opts): string | null {
  const n = (v: unknown) => (typeof v === 'string' && /^\d+$/.test(v) ? v : null);
  const operator = name.startsWith('operators ') ? n(o.positionals[0]) : null;
  if (operator) return `operator:${operator}`;
  const account = n(o.values.account) ?? (name.startsWith('accounts ') ? n(o.positionals[0]) : null);
  if (account) return `account:${account}`;
  const key = name.startsWith('keys ') ? n(o.positionals[0]) : null;
  return key ? `key:${key}` : null;
}

/** What a creating command made (`keys create`: `key:ID`, `accounts create`: `account:ID`), from its answer. */
function created(name: string, result: unknown): string | null {
  const madeId = (result as { id?: unknown } | null)?.id;
  if (typeof madeId !== 'number') return null;
  const kinds: Record<string, string> = {
    'keys create': 'key',
    'accounts create': 'account',
    'operators create': 'operator',
  };
  return kinds[name] ? `${kinds[name]}:${madeId}` : null;
}

/** Who runs the CLI, as the system knows them (SUDO_USER: who ran it with sudo). */
function systemUser(): string {
  try {
    return process.env.SUDO_USER || os.userInfo().username;
  } catch {
    return 'unknown';
  }
}

/** Resolves once the Redis connection is ready, or after 2 s (then the publish fails: the processes see the change when their cached entry expires). */
function whenReady(redis: Redis): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 2_000);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function options(args: string[]): Opts {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        ...Object.fromEntries(OPTIONS.map((n) => [n, { type: 'string' as const }])),
        disabled: { type: 'boolean' },
        off: { type: 'boolean' },
        'no-budget': { type: 'boolean' },
      },
    }) as Opts;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

function required(o: Opts, name: string): string {
  const v = o.values[name];
  if (typeof v !== 'string' || !v) throw new UsageError(`--${name} is required`);
  return v;
}

function id(value: string | undefined, what: string): number {
  if (!value || !/^\d+$/.test(value)) throw new UsageError(`${what} must be a numeric id`);
  return Number(value);
}

const optionalId = (o: Opts, name: string) =>
  o.values[name] === undefined ? undefined : id(String(o.values[name]), `--${name}`);

function limit(o: Opts): number {
  return o.values.limit === undefined ? 50 : Math.min(1000, count(String(o.values.limit), '--limit'));
}

function count(value: string, what: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`${what} must be a whole number`);
  return Number(value);
}

function list(value: string | boolean | undefined): string[] | undefined {
  return typeof value === 'string'
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;
}

async function account(db: Knex, value: string | undefined): Promise<Account> {
  const a = await getAccount(db, id(value, 'ID'));
  if (!a) throw new AccountError(`no account ${value}`);
  return a;
}

/** The console's key view, with what only an operator sees: the account and the per-key limits. */
function keyJson(k: ApiKey) {
  return { ...keyView(k), account_id: k.account_id, rpm_limit: k.rpm_limit, tpm_limit: k.tpm_limit };
}

async function showAccount(db: Knex, a: Account) {
  return { ...adminAccountView(a), keys: (await listKeys(db, a.id)).map(keyJson) };
}

function print(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
}

async function serve(args: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      options: { port: { type: 'string' }, host: { type: 'string' }, workers: { type: 'string' } },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const port = Number(parsed.values.port ?? process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be a port number');
  const workers = Number(parsed.values.workers ?? process.env.WORKERS ?? 1);
  if (!Number.isInteger(workers) || workers < 1 || workers > 256)
    throw new UsageError('--workers must be a whole number from 1 to 256');
  const host = parsed.values.host ?? process.env.HOST ?? '127.0.0.1';
  if (workers > 1 && cluster.isPrimary) {
    releaseYoungGeneration();
    return supervise(workers);
  }
  const started = await start({ port, host, migrate: cluster.isPrimary });
  stopOnSignals(started);
}

/**
 * `serve --workers N`: this process migrates the database, then runs N worker processes (node:cluster) that share
 * the port, one database and one Redis, as independent gateways do. SIGTERM / SIGINT / SIGHUP go to every worker;
 * a worker that dies is replaced; the primary exits once every worker has stopped after SIGTERM (0 when each of
 * them exited 0).
 */
async function supervise(n: number): Promise<void> {
  const db = connect();
  await migrate(db);
  await db.destroy();
  const log = createLogger();
  const prices = () => {
    try {
      logPrices(log, loadConfig());
    } catch {
      // an invalid file: each worker says where it is wrong
    }
  };
  prices();
  let stopping = false;
  let failed = false; // a worker that did not stop cleanly: the primary exits 1, so that it shows
  gatherWorkerMetrics(); // /metrics of any worker: the whole gateway's
  const fork = () => cluster.fork({ [CLUSTER_ENV]: '1' });
  const workers = () => Object.values(cluster.workers ?? {});
  const exitWhenAllStopped = () => workers().length || process.exit(failed ? 1 : 0);
  for (let i = 0; i < n; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      failed ||= code !== 0;
      exitWhenAllStopped();
      return;
    }
    process.stderr.write(
      `${JSON.stringify({ level: 40, msg: 'a worker stopped; starting another', pid: worker.process.pid, code, signal })}\n`,
    );
    setTimeout(() => stopping || fork(), 1000).unref(); // none once the gateway is stopping
  });
  const each = (signal: NodeJS.Signals) => workers().forEach((w) => w?.process.kill(signal));
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      stopping = true;
      each('SIGTERM');
      exitWhenAllStopped(); // every worker had died and none was started again yet
    });
  }
  process.on('SIGHUP', () => {
    each('SIGHUP');
    prices();
  });
}

if (require.main === module) void main(process.argv.slice(2));

function idempotencyOption(o: Opts): string | undefined {
  const k = o.values['idempotency-key'];
  if (k === undefined) return undefined;
  if (typeof k !== 'string' || !k.length || k.length > 255)
    throw new UsageError('--idempotency-key must be 1 to 255 characters');
  return k;
}

/** A date in the future (ISO 8601, e.g. 2027-01-31 or 2027-01-31T12:00:00Z), as epoch ms. */
function future(v: string, name: string): number {
  const t = Date.parse(v);
  if (!Number.isFinite(t)) throw new UsageError(`${name} must be a date (e.g. 2027-01-31T00:00:00Z)`);
  if (t <= Date.now()) throw new UsageError(`${name} must be in the future`);
  return t;
}

function budgetOption(o: Opts): { micros: number; period: BudgetPeriod } | null {
  if (o.values.budget === undefined && o.values.period === undefined) return null;
  const period = String(o.values.period ?? '') as BudgetPeriod;
  if (!BUDGET_PERIODS.includes(period))
    throw new UsageError(`--period must be one of ${BUDGET_PERIODS.join(', ')} (with --budget USD)`);
  if (o.values.budget === undefined) throw new UsageError('--budget USD goes with --period');
  return { micros: parseUsd(String(o.values.budget)), period };
}
