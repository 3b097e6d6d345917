/**
 * The `switchyard` command end to end: real processes on the database in DATABASE_URL (SQLite by default, MariaDB in
 * `make test`'s second pass), reading the JSON they print. The commands run the TypeScript sources through tsx, so the
 * test checks this checkout even when a `dist/` from an earlier build is lying around (bin/switchyard.js prefers it);
 * one test runs bin/switchyard.js itself.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { Redis } from 'ioredis';
import type { Knex } from 'knex';
import { CHANNEL } from '../../src/accounts/keyCache';
import { verifyPassword } from '../../src/accounts/passwords';
import { SCOPES } from '../../src/contract';
import { connect } from '../../src/db';

const ROOT = path.resolve(__dirname, '../..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function spawn(nodeArgs: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      nodeArgs,
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: process.env.DATABASE_URL, LOG_LEVEL: 'silent', ...env } },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
    );
  });
}

/** Runs `switchyard ARGS` from the sources. */
const run = (...args: string[]) =>
  spawn(['-r', 'tsx/cjs', '-e', "require('./src/cli.ts').main(process.argv.slice(1))", '--', ...args]);

/** Runs a command that must succeed and returns its parsed JSON output. */
async function ok(...args: string[]): Promise<any> {
  const r = await run(...args);
  if (r.code !== 0) throw new Error(`switchyard ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Runs a command that must fail with `code`; returns the `error` of the JSON on the first line of stderr. */
async function fails(code: number, ...args: string[]): Promise<string> {
  const r = await run(...args);
  expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code, stdout: '' });
  const parsed = JSON.parse(r.stderr.split('\n')[0]) as { error: string };
  expect(typeof parsed.error).toBe('string');
  return parsed.error;
}

const email = (tag: string) => `cli-${tag}-${crypto.randomUUID()}@example.com`;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

let db: Knex;
beforeAll(() => {
  db = connect(process.env.DATABASE_URL);
});
afterAll(async () => {
  await db?.destroy();
});

test('bin/switchyard.js runs: migrate reports success and help lists the commands', async () => {
  const migrate = await spawn(['bin/switchyard.js', 'migrate']);
  expect(migrate.code).toBe(0);
  expect(JSON.parse(migrate.stdout)).toEqual({ migrated: true });
  const help = await spawn(['bin/switchyard.js', '--help']);
  expect(help.code).toBe(0);
  expect(help.stdout).toContain('switchyard accounts create --email E [--credits USD]');
});

describe('accounts', () => {
  let account: any;
  const address = email('acct');

  beforeAll(async () => {
    account = await ok('accounts', 'create', '--email', address, '--credits', '12.5');
  });

  test('create prints the account with its starting credits in USD and micro-USD', () => {
    expect(account).toEqual({
      id: expect.any(Number),
      email: address,
      status: 'active',
      balance_usd: '12.500000',
      balance_micros: 12_500_000,
      referral_code: expect.stringMatching(/^[0-9A-Z]+$/),
      debt_usd: '0.000000',
      created_at: expect.stringMatching(ISO),
      keys: [],
    });
  });

  test('the starting credits are a signup row in the ledger', async () => {
    const rows = await db('ledger').where('account_id', account.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ kind: 'signup', ref: `signup_${account.id}` });
    expect(Number(rows[0].amount_micros)).toBe(12_500_000);
    expect(Number(rows[0].balance_after)).toBe(12_500_000);
  });

  test('show and list print the account', async () => {
    expect(await ok('accounts', 'show', String(account.id))).toEqual(account);
    const { accounts } = await ok('accounts', 'list');
    const { keys: _keys, ...listed } = account;
    expect(accounts).toContainEqual(listed);
  });

  test('an account without --credits starts at zero and has no ledger rows', async () => {
    const a = await ok('accounts', 'create', '--email', email('zero'));
    expect(a).toMatchObject({ balance_usd: '0.000000', balance_micros: 0 });
    expect(await db('ledger').where('account_id', a.id)).toHaveLength(0);
  });

  test('a second account with the same email (in any case) fails with exit 1', async () => {
    const error = await fails(1, 'accounts', 'create', '--email', address.toUpperCase());
    expect(error).toBe(`an account with email ${address} already exists`);
  });

  test('bad amounts, addresses and ids are refused', async () => {
    const [amount, address, unknown, notAnId] = await Promise.all([
      fails(1, 'accounts', 'create', '--email', email('x'), '--credits', '1.0000001'),
      fails(1, 'accounts', 'create', '--email', 'not-an-email'),
      fails(1, 'accounts', 'show', '987654321'),
      fails(2, 'accounts', 'show', 'abc'),
    ]);
    expect(amount).toContain('not a USD amount');
    expect(address).toBe('not an email address: not-an-email');
    expect(unknown).toBe('no account 987654321');
    expect(notAnId).toBe('ID must be a numeric id');
  });
});

describe('keys', () => {
  let accountId: number;
  let created: any;

  beforeAll(async () => {
    accountId = (await ok('accounts', 'create', '--email', email('keys'))).id;
    created = await ok(
      'keys',
      'create',
      '--account',
      String(accountId),
      '--name',
      'ci runner',
      '--quota',
      '2.5',
      '--models',
      'gpt-4o-mini, mock-chat',
      '--scopes',
      'chat,models',
      '--disabled',
    );
  });

  test('create prints the key once, with its settings', () => {
    expect(created).toEqual({
      id: expect.any(Number),
      account_id: accountId,
      name: 'ci runner',
      prefix: created.key.slice(0, 9),
      enabled: false,
      quota_usd: '2.500000',
      used_usd: '0.000000',
      rpm_limit: null,
      tpm_limit: null,
      models: ['gpt-4o-mini', 'mock-chat'],
      scopes: ['chat', 'models'],
      created_at: expect.stringMatching(ISO),
      last_used_at: null,
      expires_at: null,
      budget: null,
      key: expect.stringMatching(/^sk-[A-Za-z0-9]{48}$/),
      note: 'This key is shown once; only its hash is stored.',
    });
  });

  test('the database holds only the hash of the key', async () => {
    const row = await db('api_keys').where('id', created.id).first();
    expect(row.hash).toBe(sha256(created.key));
    const secretPart = created.key.slice(9);
    expect(Object.values(row).filter((v) => String(v).includes(secretPart))).toEqual([]);
  });

  test('show and accounts show list the key without its secret', async () => {
    const { key: secret, note: _note, ...withoutSecret } = created;
    const shown = await run('keys', 'show', String(created.id));
    expect(shown.code).toBe(0);
    expect(shown.stdout).not.toContain(secret.slice(9));
    expect(JSON.parse(shown.stdout)).toEqual(withoutSecret);
    const account = await run('accounts', 'show', String(accountId));
    expect(account.stdout).not.toContain(secret.slice(9));
    expect(JSON.parse(account.stdout).keys).toEqual([withoutSecret]);
  });

  test('enable and disable flip the key, in the output and in the database', async () => {
    expect(await ok('keys', 'enable', String(created.id))).toMatchObject({ id: created.id, enabled: true });
    expect(Boolean((await db('api_keys').where('id', created.id).first()).enabled)).toBe(true);
    expect(await ok('keys', 'disable', String(created.id))).toMatchObject({ id: created.id, enabled: false });
    expect(Boolean((await db('api_keys').where('id', created.id).first()).enabled)).toBe(false);
  });

  test('with REDIS_URL a command exits when done, after it announced the change to the gateways on Redis', async () => {
    const sub = new Redis('redis://127.0.0.1:6379');
    try {
      await sub.subscribe(CHANNEL);
      // The channel is shared with whatever else uses this Redis: wait for this key's announcement.
      const heard = new Promise<unknown>((resolve) =>
        sub.on('message', (_c, m) => JSON.parse(m).keyId === created.id && resolve(JSON.parse(m))),
      );
      const r = await spawn(
        [
          '-r',
          'tsx/cjs',
          '-e',
          "require('./src/cli.ts').main(process.argv.slice(1))",
          '--',
          'keys',
          'enable',
          String(created.id),
        ],
        { REDIS_URL: 'redis://127.0.0.1:6379' },
      );
      expect(r.code).toBe(0); // it used to hang: quit() on a connection still opening was refused, and kept it open
      expect(JSON.parse(r.stdout)).toMatchObject({ id: created.id, enabled: true });
      await expect(heard).resolves.toEqual({ keyId: created.id });
      expect((await ok('keys', 'disable', String(created.id))).enabled).toBe(false);
    } finally {
      sub.disconnect();
    }
  });

  test('a key with no options may do everything, and each key is different', async () => {
    const a = await ok('keys', 'create', '--account', String(accountId));
    expect(a).toMatchObject({
      name: null,
      enabled: true,
      quota_usd: null,
      models: null,
      scopes: [...SCOPES], // every scope there is
    });
    expect(a.key).not.toBe(created.key);
  });

  test('bad requests are refused', async () => {
    const [scopes, noAccount, unknownAccount, unknownKey] = await Promise.all([
      fails(2, 'keys', 'create', '--account', String(accountId), '--scopes', 'chat,admin'),
      fails(2, 'keys', 'create', '--name', 'no account'),
      fails(1, 'keys', 'create', '--account', '987654321'),
      fails(1, 'keys', 'disable', '987654321'),
    ]);
    expect(scopes).toContain('--scopes takes a list of');
    expect(noAccount).toBe('--account is required');
    expect(unknownAccount).toBe('no account 987654321');
    expect(unknownKey).toBe('no key 987654321');
    expect(await db('api_keys').where('account_id', accountId)).toHaveLength(2);
  });
});

describe('credits', () => {
  let accountId: number;

  beforeAll(async () => {
    accountId = (await ok('accounts', 'create', '--email', email('credits'), '--credits', '1')).id;
  });

  test('grant adds credits and writes a grant row with the note', async () => {
    const out = await ok('credits', 'grant', '--account', String(accountId), '--usd', '7.25', '--note', 'goodwill');
    expect(out).toEqual({
      account_id: accountId,
      granted_usd: '7.250000',
      balance_usd: '8.250000',
      balance_micros: 8_250_000,
      ledger_id: expect.any(Number),
    });
    const row = await db('ledger').where('id', out.ledger_id).first();
    expect(row).toMatchObject({ account_id: accountId, kind: 'grant', note: 'goodwill' });
    expect(Number(row.amount_micros)).toBe(7_250_000);
    expect(Number(row.balance_after)).toBe(8_250_000);
  });

  test('a negative grant removes credits (an adjustment row), but never below zero', async () => {
    const error = await fails(1, 'credits', 'grant', '--account', String(accountId), '--usd=-100');
    expect(error).toBe(`account ${accountId} has less than 100.000000 USD`);
    expect((await ok('accounts', 'show', String(accountId))).balance_micros).toBe(8_250_000);
    const out = await ok('credits', 'grant', '--account', String(accountId), '--usd=-8.25');
    expect(out).toMatchObject({ granted_usd: '-8.250000', balance_usd: '0.000000', balance_micros: 0 });
    expect(await db('ledger').where({ account_id: accountId, kind: 'grant' })).toHaveLength(1);
    expect(await db('ledger').where({ account_id: accountId, kind: 'adjustment' })).toHaveLength(1); // a removal
  });

  test('bad amounts and unknown accounts are refused', async () => {
    const [zero, exponent, unknown] = await Promise.all([
      fails(2, 'credits', 'grant', '--account', String(accountId), '--usd', '0'),
      fails(1, 'credits', 'grant', '--account', String(accountId), '--usd', '1e3'),
      fails(1, 'credits', 'grant', '--account', '987654321', '--usd', '1'),
    ]);
    expect(zero).toBe('--usd must not be 0');
    expect(exponent).toContain('not a USD amount');
    expect(unknown).toBe('no account 987654321');
    expect(await db('ledger').where('account_id', accountId)).toHaveLength(3);
  });
});

test('demo prints a new key and a console password for the demo account (make run), a new one at each run', async () => {
  const first = await ok('demo');
  expect(first.account.email).toBe('demo@switchyard.local');
  expect(first.key).toMatch(/^sk-/);
  expect(first.password).toMatch(/^[A-Za-z0-9_-]{16}$/);
  const hash = async () => (await db('accounts').where('id', first.account.id).first('password_hash')).password_hash;
  expect((await verifyPassword(first.password, await hash())).ok).toBe(true);
  const second = await ok('demo');
  expect(second.account.id).toBe(first.account.id);
  expect(second.password).not.toBe(first.password);
  expect((await verifyPassword(first.password, await hash())).ok).toBe(false);
  expect((await verifyPassword(second.password, await hash())).ok).toBe(true);
});

describe('usage errors exit 2 and print the help on stderr', () => {
  test('an unknown command', async () => {
    const r = await run('frobnicate', 'now');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr.split('\n')[0])).toEqual({ error: 'unknown command: frobnicate now' });
    expect(r.stderr).toContain('switchyard keys create --account ID');
  });

  test('a missing --email and an unknown option', async () => {
    const [missing, misspelt] = await Promise.all([
      fails(2, 'accounts', 'create'),
      fails(2, 'accounts', 'create', '--emial', 'a@b.co'),
    ]);
    expect(missing).toBe('--email is required');
    expect(misspelt).toContain("Unknown option '--emial'");
  });
});
