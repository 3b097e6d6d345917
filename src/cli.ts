/**
 * The `switchyard` command. Every command prints JSON on stdout (for scripts); failures print
 * {"error": "..."} on stderr and exit 1 (2 for a misused command).
 */
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { AccountError, createAccount, getAccount, listAccounts, setAccountStatus, type Account } from './accounts/accounts';
import { createKey, getKey, KeyError, listKeys, SCOPES, setKeyEnabled, type ApiKey, type Scope } from './accounts/keys';
import { DuplicateLedgerEntry, post } from './billing/ledger';
import { formatUsd, parseUsd } from './billing/money';
import { ConfigError } from './config';
import { verifyLedger } from './billing/verify';
import { createCodes, MAX_BATCH } from './billing/redemption';
import { entries } from './billing/ledger';
import { connect, migrate } from './db';
import { start, stopOnSignals } from './main';

class UsageError extends Error {}

const HELP = `switchyard — OpenAI-compatible model gateway

  switchyard migrate
  switchyard serve [--port P] [--host H]            (also PORT, HOST; default 127.0.0.1:8080)
  switchyard accounts create --email E [--credits USD]
  switchyard accounts show ID
  switchyard accounts list
  switchyard accounts disable ID                     (its keys and console sessions stop working at once)
  switchyard accounts enable ID
  switchyard keys create --account ID [--name N] [--quota USD] [--models a,b] [--scopes chat,embeddings] [--disabled]
                         [--rpm N] [--tpm N]            (per-key limits; default from the configuration)
  switchyard keys disable ID
  switchyard keys enable ID
  switchyard credits grant --account ID --usd N
  switchyard codes create --count N --usd X [--note T] (single-use top-up codes, printed once)
  switchyard ledger verify                           (exit 1 when a balance differs from its ledger)
  switchyard ledger list --account ID [--limit N]
  switchyard usage list [--account ID] [--key ID] [--limit N]
  switchyard demo                                    (a demo account with credits and a new key)

Environment: DATABASE_URL (sqlite:<path> or mysql://user:pass@host:port/db; default sqlite:./data/switchyard.db),
SWITCHYARD_CONFIG (default ./switchyard.yaml), LOG_LEVEL.`;

export async function main(argv: string[]): Promise<void> {
  try {
    await run(argv);
  } catch (e) {
    const usage = e instanceof UsageError;
    const known = usage || e instanceof AccountError || e instanceof KeyError || e instanceof ConfigError || e instanceof DuplicateLedgerEntry || e instanceof RangeError;
    process.stderr.write(`${JSON.stringify({ error: known ? (e as Error).message : `unexpected failure: ${(e as Error).message}` })}\n`);
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
  const command = `${group}${action && !action.startsWith('-') ? ` ${action}` : ''}`;
  const args = command.includes(' ') ? rest : [action, ...rest].filter((a) => a !== undefined);
  const opts = options(args);
  const db = connect();
  try {
    await migrate(db);
    print(await dispatch(db, command, opts));
  } finally {
    await db.destroy();
  }
}

interface Opts {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

function options(args: string[]): Opts {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        email: { type: 'string' },
        credits: { type: 'string' },
        account: { type: 'string' },
        name: { type: 'string' },
        quota: { type: 'string' },
        models: { type: 'string' },
        scopes: { type: 'string' },
        disabled: { type: 'boolean' },
        usd: { type: 'string' },
        rpm: { type: 'string' },
        tpm: { type: 'string' },
        limit: { type: 'string' },
        key: { type: 'string' },
        note: { type: 'string' },
        count: { type: 'string' },
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

function limit(o: Opts): number {
  return o.values.limit === undefined ? 50 : Math.min(1000, count(String(o.values.limit), '--limit'));
}

function count(value: string, what: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`${what} must be a whole number`);
  return Number(value);
}

function list(value: string | boolean | undefined): string[] | undefined {
  return typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
}

async function dispatch(db: Knex, command: string, o: Opts): Promise<unknown> {
  switch (command) {
    case 'migrate':
      return { migrated: true };
    case 'accounts create': {
      const credits = o.values.credits ? parseUsd(String(o.values.credits)) : 0;
      return showAccount(db, await createAccount(db, required(o, 'email'), credits));
    }
    case 'accounts show': {
      const account = await getAccount(db, id(o.positionals[0], 'ID'));
      if (!account) throw new AccountError(`no account ${o.positionals[0]}`);
      return showAccount(db, account);
    }
    case 'accounts list':
      return { accounts: (await listAccounts(db)).map(accountJson) };
    case 'accounts disable':
    case 'accounts enable': {
      const accountId = id(o.positionals[0], 'ID');
      return accountJson(await setAccountStatus(db, accountId, command === 'accounts enable' ? 'active' : 'disabled'));
    }
    case 'codes create': {
      const n = count(required(o, 'count'), '--count');
      if (n < 1 || n > MAX_BATCH) throw new UsageError(`--count must be between 1 and ${MAX_BATCH}`);
      const amount = parseUsd(required(o, 'usd'));
      if (amount <= 0) throw new UsageError('--usd must be more than 0');
      const codes = await createCodes(db, n, amount, (o.values.note as string | undefined) ?? null);
      return {
        codes: codes.map((c) => ({ id: c.id, code: c.code, amount_usd: formatUsd(c.amount_micros) })),
        note: 'These codes are shown once; only their hashes are stored.',
      };
    }
    case 'keys create': {
      const quota = o.values.quota ? parseUsd(String(o.values.quota)) : null;
      const scopes = list(o.values.scopes) as Scope[] | undefined;
      if (scopes?.some((s) => !SCOPES.includes(s))) throw new UsageError(`--scopes takes a list of ${SCOPES.join(', ')}`);
      const { key, secret } = await createKey(db, {
        accountId: id(required(o, 'account'), '--account'),
        name: (o.values.name as string | undefined) ?? null,
        quotaMicros: quota,
        models: list(o.values.models) ?? null,
        scopes,
        enabled: !o.values.disabled,
        rpmLimit: o.values.rpm === undefined ? null : count(String(o.values.rpm), '--rpm'),
        tpmLimit: o.values.tpm === undefined ? null : count(String(o.values.tpm), '--tpm'),
      });
      return { ...keyJson(key), key: secret, note: 'This key is shown once; only its hash is stored.' };
    }
    case 'keys disable':
    case 'keys enable':
      return keyJson(await setKeyEnabled(db, id(o.positionals[0], 'ID'), command === 'keys enable'));
    case 'keys show': {
      const key = await getKey(db, id(o.positionals[0], 'ID'));
      if (!key) throw new KeyError(`no key ${o.positionals[0]}`);
      return keyJson(key);
    }
    case 'credits grant': {
      const accountId = id(required(o, 'account'), '--account');
      if (!(await getAccount(db, accountId))) throw new AccountError(`no account ${accountId}`);
      const amount = parseUsd(required(o, 'usd'));
      if (amount === 0) throw new UsageError('--usd must not be 0');
      // A removal may not take the balance below zero.
      const row = await post(
        db,
        { accountId, kind: amount > 0 ? 'grant' : 'adjustment', amountMicros: amount, note: (o.values.note as string) ?? null },
        amount < 0 ? { floor: 0 } : {},
      );
      if (!row) throw new AccountError(`account ${accountId} has less than ${formatUsd(-amount)} USD`);
      return { account_id: accountId, granted_usd: formatUsd(amount), balance_usd: formatUsd(row.balance_after), balance_micros: row.balance_after, ledger_id: row.id };
    }
    case 'ledger verify': {
      const result = await verifyLedger(db);
      if (!result.ok) process.exitCode = 1;
      return result;
    }
    case 'ledger list': {
      const accountId = id(required(o, 'account'), '--account');
      return { entries: (await entries(db, accountId, limit(o))).map((e) => ({ ...e, amount_usd: formatUsd(e.amount_micros), created_at: new Date(e.created_at).toISOString() })) };
    }
    case 'usage list': {
      const q = db('usage_records').orderBy('id', 'desc').limit(limit(o));
      if (o.values.account) q.where('account_id', id(String(o.values.account), '--account'));
      if (o.values.key) q.where('key_id', id(String(o.values.key), '--key'));
      const rows = await q;
      return {
        usage: rows.map((r) => ({
          request_id: r.request_id,
          account_id: Number(r.account_id),
          key_id: Number(r.key_id),
          model: r.model,
          provider: r.provider,
          endpoint: r.endpoint,
          status: Number(r.status),
          prompt_tokens: Number(r.prompt_tokens),
          completion_tokens: Number(r.completion_tokens),
          counted: r.counted,
          cost_usd: formatUsd(Number(r.cost_micros)),
          cost_micros: Number(r.cost_micros),
          latency_ms: r.latency_ms === null ? null : Number(r.latency_ms),
          ttfb_ms: r.ttfb_ms === null ? null : Number(r.ttfb_ms),
          created_at: new Date(Number(r.created_at)).toISOString(),
        })),
      };
    }
    case 'demo': {
      const email = 'demo@switchyard.local';
      const existing = (await listAccounts(db)).find((a) => a.email === email);
      const account = existing ?? (await createAccount(db, email, parseUsd('10')));
      const { key, secret } = await createKey(db, { accountId: account.id, name: 'demo' });
      return { account: accountJson((await getAccount(db, account.id))!), key: secret, key_id: key.id };
    }
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

function accountJson(a: Account) {
  return { id: a.id, email: a.email, status: a.status, balance_usd: formatUsd(a.balance_micros), balance_micros: a.balance_micros, created_at: new Date(a.created_at).toISOString() };
}

function keyJson(k: ApiKey) {
  return {
    id: k.id,
    account_id: k.account_id,
    name: k.name,
    prefix: k.prefix,
    enabled: k.enabled,
    quota_usd: k.quota_micros === null ? null : formatUsd(k.quota_micros),
    used_usd: formatUsd(k.used_micros),
    models: k.models,
    scopes: k.scopes,
    rpm_limit: k.rpm_limit,
    tpm_limit: k.tpm_limit,
    created_at: new Date(k.created_at).toISOString(),
    last_used_at: k.last_used_at ? new Date(k.last_used_at).toISOString() : null,
  };
}

async function showAccount(db: Knex, a: Account) {
  return { ...accountJson(a), keys: (await listKeys(db, a.id)).map(keyJson) };
}

function print(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
}

async function serve(args: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ args, strict: true, options: { port: { type: 'string' }, host: { type: 'string' } } });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const port = Number(parsed.values.port ?? process.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be a port number');
  const started = await start({ port, host: parsed.values.host ?? process.env.HOST ?? '127.0.0.1' });
  stopOnSignals(started.stop);
}

if (require.main === module) void main(process.argv.slice(2));
