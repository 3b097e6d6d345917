/**
 * The audit log: what operators change through the admin API and the CLI is recorded — who, from where, the action,
 * what it acted on before and after — with secrets masked, and read back through GET /admin/api/audit (JSON and
 * CSV) and `switchyard audit list`. Reads are not recorded, nor are calls that failed. On DATABASE_URL.
 */
import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { startGateway, type TestGateway } from '../helpers/app';

const TOKEN = 'admin-token-for-audit-tests-0123456789';
const ROOT = path.resolve(__dirname, '../..');

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
providers: { local: { type: mock } }
models:
  - { id: mock-chat, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: local } ] }
`,
    { ...process.env, ADMIN_TOKEN: TOKEN },
  );
});

afterAll(async () => {
  await gw?.close();
});

async function admin(method: string, url: string, body?: unknown) {
  const r = await fetch(`${gw.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type'), text, json: () => JSON.parse(text) };
}

/** `switchyard ARGS` from the sources, on the test database; its printed JSON. */
function cli(...args: string[]): Promise<any> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['-r', 'tsx/cjs', '-e', "require('./src/cli.ts').main(process.argv.slice(1))", '--', ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'silent' } },
      (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(JSON.parse(stdout))),
    ),
  );
}

const audit = async (query: string) => (await admin('GET', `/admin/api/audit?${query}`)).json().data;

test('a grant through the admin API: the admin token, its address, the account before and after', async () => {
  const { accountId } = await gw.newKey({}, 1_000_000);
  const r = await admin('POST', `/admin/api/accounts/${accountId}/credits`, { usd: '2.5', note: 'refund' });
  expect(r.status).toBe(200);
  const [rec] = await audit(`target=account:${accountId}`);
  expect(rec).toMatchObject({
    actor: 'admin-token',
    address: '127.0.0.1',
    action: 'adminGrantCredits',
    target: `account:${accountId}`,
    before: { id: accountId, balance_usd: '1.000000', status: 'active' },
    after: { id: accountId, balance_usd: '3.500000', status: 'active' },
  });
  expect(Date.now() - Date.parse(rec.created_at)).toBeLessThan(60_000);
});

test('reads are not recorded, nor a call that failed (it changed nothing)', async () => {
  const { accountId } = await gw.newKey();
  await admin('GET', '/admin/api/accounts');
  const refused = await admin('POST', `/admin/api/accounts/${accountId}/credits`, { usd: '-999' });
  expect(refused.status).toBe(400);
  expect(await audit(`target=account:${accountId}`)).toEqual([]);
  expect(await audit('action=adminListAccounts')).toEqual([]);
});

test('redemption codes: the batch is recorded, each code cut to its last 4 characters', async () => {
  const r = await admin('POST', '/admin/api/redemption-codes', { count: 2, usd: '5' });
  expect(r.status).toBe(201);
  const codes: string[] = r.json().codes.map((c: { code: string }) => c.code);
  const [rec] = await audit('action=adminCreateRedemptionCodes&limit=1');
  expect(rec.target).toBeNull();
  expect(rec.after.codes.map((c: { code: string }) => c.code)).toEqual(codes.map((c) => `…${c.slice(-4)}`));
  expect(JSON.stringify(rec)).not.toContain(codes[0]);
  const csv = await admin('GET', '/admin/api/audit?action=adminCreateRedemptionCodes&format=csv');
  expect(csv.type).toBe('text/csv; charset=utf-8');
  expect(csv.text.split('\r\n')[0]).toBe('id,created_at,actor,address,action,target,before,after');
  expect(csv.text).toContain('"admin-token","127.0.0.1","adminCreateRedemptionCodes",""');
  expect(csv.text).not.toContain(codes[1]);
});

test('a CLI command is recorded as the system user, locally; `audit list` reads it back', async () => {
  const { accountId } = await gw.newKey();
  await cli('accounts', 'disable', String(accountId));
  const listed = await cli('audit', 'list', '--target', `account:${accountId}`);
  expect(listed.audit).toHaveLength(1);
  expect(listed.audit[0]).toMatchObject({
    actor: `cli:${process.env.SUDO_USER || os.userInfo().username}`,
    address: 'local',
    action: 'accounts disable',
    before: { status: 'active' },
    after: { status: 'disabled' },
  });
  // the read itself was not recorded
  expect(await audit('action=audit list')).toEqual([]);
});

test('a key created by the CLI is recorded without its secret; pages go back with next_cursor', async () => {
  const { accountId } = await gw.newKey();
  const made = await cli('keys', 'create', '--account', String(accountId), '--name', 'ci');
  const [rec] = await audit(`target=key:${made.id}`);
  expect(rec).toMatchObject({ action: 'keys create', before: null, after: { id: made.id, name: 'ci' } });
  expect(JSON.stringify(rec)).not.toContain(made.key);
  const first = (await admin('GET', '/admin/api/audit?limit=1')).json();
  expect(first.data).toHaveLength(1);
  const second = (await admin('GET', `/admin/api/audit?limit=1&cursor=${first.next_cursor}`)).json();
  expect(second.data[0].id).toBeLessThan(first.data[0].id);
});
