/**
 * The catalog in the database (`catalog: database`) through real HTTP on loopback: the file's catalog imported as the
 * first revision; providers and models changed through /admin/api and served by the next request; invalid changes
 * refused with the field named and nothing stored; credentials encrypted at rest, write-only (grepped for in every
 * answer and in the stored rows), set only by an owner; the route test against a fake upstream; export, import and
 * rotate-secret with the real CLI; a wrong key stopping start-up with one line. On DATABASE_URL (SQLite by default).
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { authenticator } from 'otplib';
import { connect, dialectOf } from '../../src/db';
import { encrypt } from '../../src/secrets';
import { defaultPlan, FakeOpenAI } from '../fakes/openaiUpstream';
import { LogLines, startGateway, type TestGateway } from '../helpers/app';
import { ConsoleClient, uniqueEmail } from '../helpers/console';
import { writeConfig } from '../helpers/process';

const ROOT = path.resolve(__dirname, '../..');
const TOKEN = 'admin-token-for-catalog-tests-0123456789';
const KEY = crypto.randomBytes(32).toString('base64');
const UPSTREAM_KEY = 'sk-upstream-secret-ABCDEF0123456789';
const ROTATED_KEY = 'sk-rotated-secret-ZYXWVU9876543210';

const INVALID_KEY = 'sk-invalid-change-secret-QQQQ7777';
const upstream = new FakeOpenAI();
/** A second upstream: where a route changed during a request points the next one. */
const upstream2 = new FakeOpenAI();
/** The gateway's log, from the first line: grepped for every credential at the end. */
const logs = new LogLines();
let gw: TestGateway;
let configFile: string;
const db = connect(process.env.DATABASE_URL);
/** Every answer of the gateway in this file, grepped for credentials at the end. */
const answers: string[] = [];

const config = () => `
catalog: database
limits: { rpm: 0, tpm: 0 }
providers:
  up: { type: openai, base_url: "${upstream.url}/v1", api_key: "${UPSTREAM_KEY}" }
  up2: { type: openai, base_url: "${upstream2.url}", api_key: "sk-second-upstream-key-9999" }
  local: { type: mock }
models:
  - { id: mock-chat, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: local } ] }
`;

const env = () => ({ ...process.env, ADMIN_TOKEN: TOKEN, SWITCHYARD_SECRET_KEY: KEY, SWITCHYARD_CONFIG: configFile });

beforeAll(async () => {
  await upstream.start();
  await upstream2.start();
  await db('catalog_revisions').del(); // this file's catalog starts from nothing
  configFile = writeConfig(config());
  gw = await startGateway(config(), env(), { logTo: logs });
});

afterAll(async () => {
  await gw?.close();
  await upstream.close();
  await upstream2.close();
  await db.destroy();
});

async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(`${gw.url}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  answers.push(text);
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

/** `switchyard ARGS` from the sources; its exit code and output. */
function cli(args: string[], extra: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ['-r', 'tsx/cjs', '-e', "require('./src/cli.ts').main(process.argv.slice(1))", '--', ...args],
      { cwd: ROOT, env: { ...env(), LOG_LEVEL: 'silent', ...extra }, timeout: 60_000 },
      (err, stdout, stderr) => {
        answers.push(stdout, stderr);
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    ),
  );
}

const chat = (key: string, model: string) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }], max_tokens: 5 }),
  });

const YAML_CATALOG =
  'providers: { local: { type: mock } }\nmodels: [ { id: m, kind: chat, routes: [ { provider: local } ] } ]\n';

const UP_MODEL = { kind: 'chat', price: { input: 2, output: 4 }, routes: [{ provider: 'up', model: 'gpt-up' }] };

test('the file seeds the first revision; GET shows providers and models with credentials as their last 4 characters', async () => {
  const r = await call('GET', '/admin/api/catalog');
  expect(r.status).toBe(200);
  expect(r.body.source).toBe('database');
  expect(r.body.revision).toBeGreaterThan(0);
  const up = r.body.providers.find((p: any) => p.name === 'up');
  expect(up).toMatchObject({ type: 'openai', base_url: `${upstream.url}/v1`, credentials: { api_key: '…6789' } });
  expect(r.body.models.map((m: any) => m.id)).toEqual(['mock-chat']);
  const rows = await db('catalog_revisions').select('document');
  expect(rows.length).toBe(1);
  expect(rows[0].document).not.toContain(UPSTREAM_KEY);
  expect(rows[0].document).toContain('sy1:');
});

test('a model added is served by the next request; a price changed is charged; a deleted one is gone', async () => {
  const { secret } = await gw.newKey();
  expect((await chat(secret, 'up-chat')).status).toBe(400); // not in the catalog yet
  const put = await call('PUT', '/admin/api/catalog/models/up-chat', UP_MODEL);
  expect(put.status).toBe(200);
  expect(put.body.model).toMatchObject({ id: 'up-chat', kind: 'chat' });
  const served = await chat(secret, 'up-chat');
  expect(served.status).toBe(200);
  expect(upstream.requests.at(-1)!.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
  const changed = await call('PUT', '/admin/api/catalog/models/up-chat', {
    ...UP_MODEL,
    price: { input: 0, output: 0 },
  });
  expect(changed.status).toBe(200);
  const before = (
    await db('accounts')
      .where({ id: (await gw.newKey()).accountId })
      .first()
  ).balance_micros;
  const free = await gw.newKey();
  expect((await chat(free.secret, 'up-chat')).status).toBe(200);
  await gw.settled();
  const after = await db('accounts').where({ id: free.accountId }).first();
  expect(Number(after.balance_micros)).toBe(Number(before)); // priced at 0 now: nothing charged
  const gone = await call('DELETE', '/admin/api/catalog/models/up-chat');
  expect(gone.status).toBe(200);
  expect((await chat(secret, 'up-chat')).status).toBe(400);
  expect((await call('DELETE', '/admin/api/catalog/models/up-chat')).status).toBe(404);
});

test('an invalid change is a 400 naming the model and the field, and stores nothing', async () => {
  const count = async () => Number((await db('catalog_revisions').count({ n: '*' }).first())!.n);
  const n = await count();
  const bad = await call('PUT', '/admin/api/catalog/models/bad', { ...UP_MODEL, price: { input: -1 } });
  expect(bad.status).toBe(400);
  expect(bad.body.error).toMatchObject({ message: 'model bad: price.input: must be >= 0', param: 'price.input' });
  const route = await call('PUT', '/admin/api/catalog/models/bad', { kind: 'chat', routes: [{ provider: 'opnai' }] });
  expect(route.status).toBe(400);
  expect(route.body.error.message).toBe("model bad: routes[0].provider: unknown provider 'opnai'");
  expect(route.body.error.param).toBe('routes[0].provider');
  const provider = await call('PUT', '/admin/api/catalog/providers/x', { type: 'openai' });
  expect(provider.status).toBe(400);
  expect(provider.body.error.message).toContain("provider x: missing required setting 'base_url'");
  expect(await count()).toBe(n);
  expect((await call('GET', '/admin/api/catalog')).body.models.map((m: any) => m.id)).toEqual(['mock-chat']);
});

test('a provider in use cannot be deleted: the 409 names its models', async () => {
  expect((await call('PUT', '/admin/api/catalog/models/uses-up', UP_MODEL)).status).toBe(200);
  const r = await call('DELETE', '/admin/api/catalog/providers/up');
  expect(r.status).toBe(409);
  expect(r.body.error).toMatchObject({ code: 'provider_in_use' });
  expect(r.body.error.message).toContain('uses-up');
  expect((await call('DELETE', '/admin/api/catalog/models/uses-up')).status).toBe(200);
});

test('a credential left out is kept, a new one is used at once, and none is ever shown', async () => {
  const kept = await call('PUT', '/admin/api/catalog/providers/up', { type: 'openai', base_url: `${upstream.url}/v1` });
  expect(kept.status).toBe(200);
  expect(kept.body.provider.credentials.api_key).toBe('…6789');
  expect((await call('PUT', '/admin/api/catalog/models/uses-up', UP_MODEL)).status).toBe(200);
  const { secret } = await gw.newKey();
  await chat(secret, 'uses-up');
  expect(upstream.requests.at(-1)!.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
  const rotated = await call('PUT', '/admin/api/catalog/providers/up', {
    type: 'openai',
    base_url: `${upstream.url}/v1`,
    credentials: { api_key: ROTATED_KEY },
    headers: { 'x-api-key': 'header-secret-value-1234', 'x-plain': 'visible' },
  });
  expect(rotated.status).toBe(200);
  expect(rotated.body.provider).toMatchObject({
    credentials: { api_key: '…3210' },
    headers: { 'x-api-key': '…1234', 'x-plain': 'visible' },
  });
  await chat(secret, 'uses-up');
  expect(upstream.requests.at(-1)!.headers.authorization).toBe(`Bearer ${ROTATED_KEY}`);
  // the header sent back as shown keeps its value
  const again = await call('PUT', '/admin/api/catalog/providers/up', {
    type: 'openai',
    base_url: `${upstream.url}/v1`,
    headers: { 'x-api-key': '…1234', 'x-plain': 'visible' },
  });
  expect(again.status).toBe(200);
  await chat(secret, 'uses-up');
  expect(upstream.requests.at(-1)!.headers['x-api-key']).toBe('header-secret-value-1234');
  const audit = await call('GET', '/admin/api/audit?target=provider:up');
  expect(audit.body.data[0]).toMatchObject({ action: 'adminPutCatalogProvider', target: 'provider:up' });
  const rows = await db('catalog_revisions').select('document');
  for (const r of rows) for (const s of [ROTATED_KEY, 'header-secret-value-1234']) expect(r.document).not.toContain(s);
});

test('the route test answers the upstream status: 200, then 401 with its message (no key in it)', async () => {
  const ok = await call('POST', '/admin/api/catalog/models/uses-up/routes/0/test');
  expect(ok.status).toBe(200);
  expect(ok.body).toMatchObject({ ok: true, status: 200, error: null, model: 'gpt-up' });
  expect(upstream.requests.at(-1)!.body.max_tokens ?? upstream.requests.at(-1)!.body.max_completion_tokens).toBe(1);
  upstream.plan({
    kind: 'json',
    status: 401,
    body: { error: { message: `Incorrect API key provided: ${ROTATED_KEY}`, type: 'invalid_request_error' } },
  });
  const refused = await call('POST', '/admin/api/catalog/models/uses-up/routes/0/test');
  expect(refused.body).toMatchObject({ ok: false, status: 401 });
  expect(refused.body.error).toContain('Incorrect API key provided');
  expect((await call('POST', '/admin/api/catalog/models/uses-up/routes/5/test')).status).toBe(404);
});

test('a request in flight keeps the catalog it started with: old price, old route; the next one gets the new', async () => {
  const put = (price: object, provider: string) =>
    call('PUT', '/admin/api/catalog/models/flight', { kind: 'chat', price, routes: [{ provider, model: 'gpt-fl' }] });
  expect((await put({ input: 2, output: 4 }, 'up')).status).toBe(200);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  upstream.plan({
    kind: 'answer',
    with: (r) => ({ ...(defaultPlan(r) as { kind: 'json'; body: unknown }), wait: held }),
  });
  const seen = upstream.requests.length;
  const slow = await gw.newKey();
  const inFlight = chat(slow.secret, 'flight');
  while (upstream.requests.length === seen) await new Promise((r) => setTimeout(r, 10)); // it reached the upstream
  expect((await put({ input: 1000, output: 2000 }, 'up2')).status).toBe(200); // price and route changed meanwhile
  release();
  expect((await inFlight).status).toBe(200);
  const next = await gw.newKey();
  const seen2 = upstream2.requests.length;
  expect((await chat(next.secret, 'flight')).status).toBe(200);
  await gw.settled();
  expect(upstream2.requests.length).toBe(seen2 + 1); // the next one went to the new route
  const cost = async (accountId: number, input: number, output: number) => {
    const r = await db('usage_records').where('account_id', accountId).first();
    expect(r.prompt_tokens).toBeGreaterThan(0);
    expect(r.provider).toBe(input === 2 ? 'up' : 'up2');
    return [Number(r.cost_micros), r.prompt_tokens * input + r.completion_tokens * output];
  };
  const [old, oldExpected] = await cost(slow.accountId, 2, 4);
  expect(old).toBe(oldExpected);
  const [now, nowExpected] = await cost(next.accountId, 1000, 2000);
  expect(now).toBe(nowExpected);
  expect((await call('DELETE', '/admin/api/catalog/models/flight')).status).toBe(200);
});

test('a change is live only with its audit record: a record refused leaves nothing stored or served', async () => {
  const dialect = dialectOf(db);
  // Each database says "refuse this row" in its own trigger language (PostgreSQL's runs a function).
  const drop =
    dialect === 'pg' ? 'DROP TRIGGER IF EXISTS refuse_audit ON audit_log' : 'DROP TRIGGER IF EXISTS refuse_audit';
  await db.raw(drop);
  if (dialect === 'pg')
    await db.raw(
      "CREATE OR REPLACE FUNCTION refuse_audit() RETURNS trigger AS $$ BEGIN IF NEW.target = 'model:unaudited' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
    );
  await db.raw(
    {
      mysql:
        "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW BEGIN IF NEW.target = 'model:unaudited' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit refused'; END IF; END",
      pg: 'CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit()',
      sqlite:
        "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log WHEN NEW.target = 'model:unaudited' BEGIN SELECT RAISE(ABORT, 'audit refused'); END",
    }[dialect],
  );
  const count = async () => Number((await db('catalog_revisions').count({ n: '*' }).first())!.n);
  const n = await count();
  try {
    const r = await call('PUT', '/admin/api/catalog/models/unaudited', UP_MODEL);
    expect(r.status).not.toBe(200);
  } finally {
    await db.raw(drop);
  }
  expect(await count()).toBe(n);
  await gw.app.catalog.poll();
  const { secret } = await gw.newKey();
  expect((await chat(secret, 'unaudited')).status).toBe(400); // not served: no such model
  const audited = await call('PUT', '/admin/api/catalog/models/unaudited', UP_MODEL);
  expect(audited.status).toBe(200);
  const rec = (await call('GET', '/admin/api/audit?target=model:unaudited')).body.data;
  expect(rec).toHaveLength(1); // once: in the revision's transaction, not again by the HTTP layer
  expect(rec[0]).toMatchObject({ action: 'adminPutCatalogModel', actor: 'admin-token', before: null });
  expect(rec[0].after).toMatchObject({ id: 'unaudited', price: { input: 2, output: 4 } });
  expect((await call('DELETE', '/admin/api/catalog/models/unaudited')).status).toBe(200);
});

test('an invalid change carrying a credential is refused without echoing it', async () => {
  const r = await call('PUT', '/admin/api/catalog/providers/broken', {
    type: 'openai',
    base_url: 'not a url',
    credentials: { api_key: INVALID_KEY },
  });
  expect(r.status).toBe(400);
  expect(JSON.stringify(r.body)).not.toContain(INVALID_KEY);
});

/** An operator's TOTP secret as stored. */
const storedTotp = async (email: string) => String((await db('operators').where({ email }).first()).totp_secret);
/** A code of the next time step (accepted: one step of drift; and not the step the enrolment used). */
const nextCode = (secret: string) => authenticator.clone({ epoch: Date.now() + 30_000 }).generate(secret);
/** An operator whose TOTP secret was stored in the clear, before SWITCHYARD_SECRET_KEY was set. */
let legacy: { email: string; password: string; secret: string };

async function signIn(url: string, email: string, password: string, code: string) {
  return new ConsoleClient(url).post('/admin/api/session', { email, password, code });
}

test("operators' TOTP secrets are stored sealed with the key; sign-in works; another key or none refuses it, logged", async () => {
  const support = await operator('support');
  const stored = await storedTotp(support.email);
  expect(stored.startsWith('sy1:')).toBe(true);
  expect(stored).not.toContain(support.totp);
  expect((await signIn(gw.url, support.email, support.password, nextCode(support.totp))).status).toBe(200);
  // a secret stored in the clear (before the key was set) keeps working
  const email = uniqueEmail('legacy');
  const made = JSON.parse((await cli(['operators', 'create', '--email', email, '--role', 'viewer'])).stdout);
  const secret = authenticator.generateSecret();
  await db('operators').where({ email }).update({ totp_secret: secret, totp_enabled: true });
  legacy = { email, password: made.password, secret };
  expect((await signIn(gw.url, email, made.password, authenticator.generate(secret))).status).toBe(200);
  for (const key of [crypto.randomBytes(32).toString('base64'), '']) {
    const lines = new LogLines();
    const other = await startGateway(YAML_CATALOG, { ...process.env, SWITCHYARD_SECRET_KEY: key }, { logTo: lines });
    try {
      const r = await signIn(other.url, support.email, support.password, authenticator.generate(support.totp));
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('invalid_credentials');
      expect(lines.text()).toContain('operator sign-in refused: the TOTP secret cannot be read');
      expect(lines.text()).toContain(key ? 'cannot be decrypted' : 'SWITCHYARD_SECRET_KEY is not set');
      expect(lines.text()).not.toContain(support.totp);
      expect(JSON.stringify(r.body)).not.toContain(support.totp);
    } finally {
      await other.close();
    }
  }
}, 120_000);

test('CLI commands that do not touch the catalog work without SWITCHYARD_SECRET_KEY, or with a wrong one', async () => {
  for (const key of ['', crypto.randomBytes(32).toString('hex'), 'not-a-key']) {
    const env = { SWITCHYARD_SECRET_KEY: key };
    const made = await cli(['accounts', 'create', '--email', uniqueEmail('nokey')], env);
    expect(made).toMatchObject({ code: 0 });
    const account = JSON.parse(made.stdout).id;
    for (const args of [
      ['keys', 'create', '--account', String(account)],
      ['credits', 'grant', '--account', String(account), '--usd', '1'],
      ['accounts', 'show', String(account)],
      ['operators', 'create', '--email', uniqueEmail('nokey-op'), '--role', 'viewer'],
      ['operators', 'list'],
      ['audit', 'list', '--limit', '1'],
    ]) {
      const r = await cli(args, env);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
    }
    const exported = await cli(['catalog', 'export'], env); // the catalog needs the right key
    expect(exported.code).toBe(1);
  }
}, 240_000);

test('an admin may edit models but not credentials; an owner may', async () => {
  const admin = await operator('admin');
  const m = await admin.call('PUT', '/admin/api/catalog/models/by-admin', UP_MODEL);
  expect(m.status).toBe(200);
  const refused = await admin.call('PUT', '/admin/api/catalog/providers/up', {
    type: 'openai',
    base_url: `${upstream.url}/v1`,
    credentials: { api_key: 'sk-admin-may-not-0000000000' },
  });
  expect(refused.status).toBe(403);
  expect(refused.body.error.code).toBe('insufficient_role');
  const plain = await admin.call('PUT', '/admin/api/catalog/providers/up', {
    type: 'openai',
    base_url: `${upstream.url}/v1`,
    headers: { 'x-api-key': '…1234', 'x-plain': 'changed' },
  });
  expect(plain.status).toBe(200);
  const viewer = await operator('viewer');
  expect((await viewer.call('GET', '/admin/api/catalog')).status).toBe(200);
  expect((await viewer.call('DELETE', '/admin/api/catalog/models/by-admin')).status).toBe(403);
  const owner = await operator('owner');
  const set = await owner.call('PUT', '/admin/api/catalog/providers/up', {
    type: 'openai',
    base_url: `${upstream.url}/v1`,
    credentials: { api_key: ROTATED_KEY },
  });
  expect(set.status).toBe(200);
}, 120_000);

test('export leaves credentials out (last 4 in a comment); import of it keeps them; rotate-secret re-encrypts', async () => {
  const out = await cli(['catalog', 'export']);
  expect(out.code).toBe(0);
  expect(out.stdout).toContain('credentials kept in the database');
  expect(out.stdout).toContain('api_key …3210');
  const file = path.join(path.dirname(configFile), 'catalog.yaml');
  fs.writeFileSync(file, out.stdout.replace('id: by-admin', 'id: imported'));
  const imported = await cli(['catalog', 'import', '--file', file]);
  expect(imported.code).toBe(0);
  await gw.app.catalog.poll();
  const r = await call('GET', '/admin/api/catalog');
  expect(r.body.models.map((m: any) => m.id)).toContain('imported');
  expect(r.body.providers.find((p: any) => p.name === 'up').credentials.api_key).toBe('…3210');
  fs.writeFileSync(file, 'providers:\n  up: { type: openai }\nmodels: []\n');
  const invalid = await cli(['catalog', 'import', '--file', file]);
  expect(invalid.code).toBe(1);
  expect(invalid.stderr).toContain(`${file}:2:7: providers.up: missing required setting 'base_url'`);
  const NEW = crypto.randomBytes(32).toString('hex');
  // an operator sealed under another key stops the whole rotation, named; nothing is rewritten
  const stray = uniqueEmail('stray');
  await cli(['operators', 'create', '--email', stray, '--role', 'viewer']);
  const foreign = encrypt(authenticator.generateSecret(), crypto.randomBytes(32));
  await db('operators').where({ email: stray }).update({ totp_secret: foreign });
  const before = await storedTotp(legacy.email);
  const refused = await cli(['catalog', 'rotate-secret'], { SWITCHYARD_NEW_SECRET_KEY: NEW });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(
    `cannot be decrypted with SWITCHYARD_SECRET_KEY (a different key?): operator ${stray}`,
  );
  expect(await storedTotp(legacy.email)).toBe(before);
  await db('operators').where({ email: stray }).del();
  const rotated = await cli(['catalog', 'rotate-secret'], { SWITCHYARD_NEW_SECRET_KEY: NEW });
  expect(rotated.code).toBe(0);
  expect(JSON.parse(rotated.stdout).operators).toBeGreaterThanOrEqual(2);
  const sealed = await storedTotp(legacy.email); // the one stored in the clear is sealed now, under the new key
  expect(sealed.startsWith('sy1:')).toBe(true);
  expect(sealed).not.toContain(legacy.secret);
  const renewed = await startGateway(YAML_CATALOG, { ...process.env, SWITCHYARD_SECRET_KEY: NEW });
  try {
    expect((await signIn(renewed.url, legacy.email, legacy.password, nextCode(legacy.secret))).status).toBe(200);
  } finally {
    await renewed.close();
  }
  const record = (await db('audit_log').where({ action: 'catalog rotate-secret' }).orderBy('id', 'desc').first())!;
  expect(JSON.parse(record.after)).toMatchObject({ revisions: JSON.parse(rotated.stdout).revisions });
  expect(await cli(['catalog', 'export'])).toMatchObject({ code: 1 }); // the old key opens nothing now
  expect((await cli(['catalog', 'export'], { SWITCHYARD_SECRET_KEY: NEW })).stdout).toContain('…3210');
  const wrong = await cli(['serve', '--port', '0'], { SWITCHYARD_SECRET_KEY: KEY });
  expect(wrong.code).toBe(1);
  expect(wrong.stderr.trim().split('\n')).toHaveLength(1);
  expect(wrong.stderr).toContain('cannot be decrypted with SWITCHYARD_SECRET_KEY');
  const none = await cli(['serve', '--port', '0'], { SWITCHYARD_SECRET_KEY: '' });
  expect(none.code).toBe(1);
  expect(none.stderr).toContain('SWITCHYARD_SECRET_KEY is not set');
  const malformed = await cli(['serve', '--port', '0'], { SWITCHYARD_SECRET_KEY: 'short' });
  expect(malformed.stderr).toContain('must be 32 random bytes as base64');
}, 240_000);

test('with catalog: yaml, writes are a 409 saying how to switch', async () => {
  const yaml = await startGateway(
    'providers: { local: { type: mock } }\nmodels: [ { id: m, kind: chat, routes: [ { provider: local } ] } ]\n',
    { ...process.env, ADMIN_TOKEN: TOKEN },
  );
  try {
    const r = await fetch(`${yaml.url}/admin/api/catalog/models/m`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const body = (await r.json()) as any;
    expect(r.status).toBe(409);
    expect(body.error.code).toBe('catalog_in_file');
    expect(body.error.message).toContain('set catalog: database');
    const got = (await (
      await fetch(`${yaml.url}/admin/api/catalog`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as any;
    expect(got).toMatchObject({ source: 'yaml', revision: null });
  } finally {
    await yaml.close();
  }
});

test('no answer, export, stored row or log line holds a credential', async () => {
  const all = answers.join('\n');
  const secrets = [UPSTREAM_KEY, ROTATED_KEY, 'header-secret-value-1234', 'sk-admin-may-not-0000000000', INVALID_KEY];
  for (const s of secrets) expect(all).not.toContain(s);
  // the log was captured through every change, the route tests (the upstream's 401 echoing the key) and the refusals
  const log = logs.text();
  expect(log).toContain('catalog revision applied');
  expect(log).toContain('/admin/api/catalog/providers/broken');
  for (const s of [...secrets, 'sk-second-upstream-key-9999']) expect(log).not.toContain(s);
});

/** An operator of `role`, made with the CLI, signed in with a real TOTP code. */
async function operator(role: string) {
  const email = uniqueEmail(role);
  const made = JSON.parse((await cli(['operators', 'create', '--email', email, '--role', role])).stdout);
  const c = new ConsoleClient(gw.url);
  const first = await c.post('/admin/api/session', { email, password: made.password });
  c.csrf = first.body.csrf_token;
  const started = await c.post('/admin/api/session/totp');
  const secret = new URL(started.body.otpauth_uri).searchParams.get('secret')!;
  expect((await c.post('/admin/api/session/totp/confirm', { code: authenticator.generate(secret) })).status).toBe(200);
  const orig = c.call.bind(c);
  c.call = async (method, p, body, o) => {
    const r = await orig(method, p, body, o);
    answers.push(JSON.stringify(r.body));
    return r;
  };
  return Object.assign(c, { email, password: made.password as string, totp: secret });
}
