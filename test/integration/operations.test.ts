/**
 * Operations: /healthz, /readyz, /metrics (Prometheus text; METRICS_TOKEN), SIGTERM drain (503 for new work while
 * streams in flight finish, exit 0, everything settled), SIGHUP reload (a new price applies to the next request
 * without a restart; an invalid file is refused and the old configuration kept), `serve --workers N`.
 * Runs on DATABASE_URL (SQLite, MariaDB, PostgreSQL).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { Knex } from 'knex';
import { createAccount } from '../../src/accounts/accounts';
import { createKey, type NewKey } from '../../src/accounts/keys';
import { verifyLedger } from '../../src/billing/verify';
import { connect } from '../../src/db';
import { chatStreamEvents, FakeOpenAI } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { startProcess, writeConfig, type GatewayProcess } from '../helpers/process';

jest.setTimeout(60_000);

let db: Knex;
let up: FakeOpenAI;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  db = connect(process.env.DATABASE_URL);
  up = await new FakeOpenAI().start();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop('SIGKILL')));
});

afterAll(async () => {
  await db.destroy();
  await up.close();
});

async function account(credits = 1_000_000, key: Partial<NewKey> = {}) {
  const a = await createAccount(db, `ops-${crypto.randomUUID()}@example.com`, credits);
  const { secret } = await createKey(db, { accountId: a.id, ...key });
  return { accountId: a.id, secret };
}

/** Polls until `ok` (the test's own time limit ends a wait that never comes true). */
async function until(ok: () => Promise<boolean>): Promise<void> {
  while (!(await ok())) await new Promise((r) => setTimeout(r, 25));
}

const chat = (url: string, secret: string, body: object = {}, signal?: AbortSignal) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    signal,
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50, ...body }),
  });

describe('health, readiness and metrics', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(
      `
routing: { breaker_failures: 2, breaker_cooldown_ms: 60000 }
limits: { rpm: 0, tpm: 0 }
billing: { flush_ms: 600000 } # settlements wait in the queue until a test asks for them (gw.settled())
providers:
  up: { type: openai, base_url: "${up.url}" }
  dead: { type: openai, base_url: "http://127.0.0.1:9/v1", timeouts: { connect_ms: 1000 } }
models:
  - { id: priced, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: up, model: up-model } ] }
  - { id: gone, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: dead, model: dead-model } ] }
`,
      { ...process.env, METRICS_TOKEN: 'metrics-token-for-the-test-0123' },
    );
  });
  afterAll(() => gw.close());

  test('/healthz and /readyz answer without a key', async () => {
    const h = await fetch(`${gw.url}/healthz`);
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ status: 'ok' });
    const r = await fetch(`${gw.url}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ ready: true, database: 'ok', draining: false });
  });

  test('/metrics needs METRICS_TOKEN when set, and reports requests, upstream calls, tokens, spend, errors and breakers', async () => {
    expect((await fetch(`${gw.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${gw.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const a = await account();
    expect((await chat(gw.url, a.secret)).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await chat(gw.url, a.secret, { model: 'gone' })).status).toBe(502);
    expect((await chat(gw.url, 'sk-not-a-key-000000000000000000000000')).status).toBe(401);
    await gw.settled();
    const res = await fetch(`${gw.url}/metrics`, {
      headers: { authorization: 'Bearer metrics-token-for-the-test-0123' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const value = (line: string) => {
      const m = text.split('\n').find((l) => l.startsWith(line));
      return m === undefined ? undefined : Number(m.slice(line.length).trim());
    };
    expect(value('switchyard_http_requests_total{operation="createChatCompletion",status="200"}')).toBe(1);
    expect(value('switchyard_http_requests_total{operation="createChatCompletion",status="401"}')).toBe(1);
    expect(value('switchyard_http_requests_total{operation="createChatCompletion",status="502"}')).toBe(2);
    expect(value('switchyard_upstream_requests_total{operation="chat",model="priced",route="up",status="200"}')).toBe(
      1,
    );
    // the fake upstream reports 9 prompt and 12 completion tokens (test/fakes/openaiUpstream.ts)
    const usage = (await db('usage_records').where('account_id', a.accountId).andWhere('status', 200).first())!;
    expect(value('switchyard_tokens_total{model="priced",class="prompt"}')).toBe(Number(usage.prompt_tokens));
    expect(value('switchyard_tokens_total{model="priced",class="completion"}')).toBe(Number(usage.completion_tokens));
    expect(value('switchyard_spend_micro_usd_total{model="priced"}')).toBe(Number(usage.cost_micros));
    expect(value('switchyard_upstream_errors_total{route="dead/dead-model",cause="connect"}')).toBe(2);
    expect(value('switchyard_breaker_open{route="dead/dead-model"}')).toBe(1);
    expect(value('switchyard_breaker_open{route="up/up-model"}')).toBe(0);
    expect(value('switchyard_breaker_state{route="dead/dead-model",state="open"}')).toBe(1);
    expect(value('switchyard_breaker_state{route="dead/dead-model",state="closed"}')).toBe(0);
    expect(value('switchyard_breaker_state{route="up/up-model",state="closed"}')).toBe(1);
    expect(value('switchyard_requests_in_flight')).toBe(0);
    expect(value('switchyard_streams_active')).toBe(0);
    expect(value('switchyard_settlements_queued')).toBe(0);
    expect(text).toMatch(/^switchyard_db_pool_connections\{state="used"\} \d+$/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(text).toMatch(/^switchyard_time_to_first_byte_seconds_count\{model="priced",route="up"\} 1$/m);
  });

  test('/metrics: a stream is counted (in flight, active stream) while it runs; once its client has gone, its settlement is queued until written', async () => {
    const scrape = async (name: string) => {
      const text = await (
        await fetch(`${gw.url}/metrics`, { headers: { authorization: 'Bearer metrics-token-for-the-test-0123' } })
      ).text();
      return Number(
        text
          .split('\n')
          .find((l) => l.startsWith(`${name} `))
          ?.split(' ')[1],
      );
    };
    expect(await scrape('switchyard_requests_in_flight')).toBe(0);
    const a = await account();
    up.plan({ kind: 'stall', events: chatStreamEvents('up-model', ['Hello'], true, {}).slice(0, 2) }); // then nothing
    const client = new AbortController();
    const res = await chat(gw.url, a.secret, { stream: true }, client.signal);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('Hello')) text += new TextDecoder().decode((await reader.read()).value);
    expect(await scrape('switchyard_requests_in_flight')).toBe(1);
    expect(await scrape('switchyard_streams_active')).toBe(1);
    client.abort();
    await until(async () => (await scrape('switchyard_requests_in_flight')) === 0);
    expect(await scrape('switchyard_streams_active')).toBe(0);
    expect(await scrape('switchyard_settlements_queued')).toBe(1); // write-behind
    await gw.settled();
    expect(await scrape('switchyard_settlements_queued')).toBe(0);
    expect(await db('usage_records').where('account_id', a.accountId)).toHaveLength(1);
  });
});

describe('signals', () => {
  const INFO = { LOG_LEVEL: 'info' }; // the lines that say what happened
  const SLOW = `
limits: { rpm: 0, tpm: 0 }
server: { shutdown_grace_ms: 20000 }
providers: { local: { type: mock, latency_ms: 150 } }
models:
  - { id: priced, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: local } ] }
`;

  test('SIGTERM: new requests get 503 and /readyz fails while a stream in flight finishes; then exit 0, everything settled', async () => {
    const gw = await startProcess(writeConfig(SLOW), INFO);
    running.push(gw);
    const a = await account();
    const stream = await chat(gw.url, a.secret, { stream: true });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    gw.proc.kill('SIGTERM');
    // wait for the drain to show, then: new work is refused, the stream goes on
    let ready: Response | undefined;
    for (let i = 0; i < 100 && (ready = await fetch(`${gw.url}/readyz`)).status === 200; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(ready!.status).toBe(503);
    expect(await ready!.json()).toMatchObject({ ready: false, draining: true });
    const refused = await chat(gw.url, a.secret);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('connection')).toBe('close'); // the client's next request goes elsewhere
    expect(((await refused.json()) as any).error.code).toBe('service_unavailable');
    expect((await fetch(`${gw.url}/console/api/config`)).status).toBe(503); // every operation of the API, not only /v1
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
    await gw.stop(); // another SIGTERM during the drain changes nothing: the process exits 0 once it is done
    expect(gw.proc.exitCode).toBe(0);
    expect(gw.output()).toContain('stopped: settlements written, leases returned');
    // one JSON line per request; a refused one says why; the key never appears (its prefix does)
    expect(gw.output()).toMatch(
      /"path":"\/v1\/chat\/completions","status":503,[^\n]*"error":"service_unavailable","cause":"The service is temporarily unavailable"/,
    );
    expect(gw.output()).not.toContain(a.secret);
    const records = await db('usage_records').where('account_id', a.accountId);
    expect(records.map((r) => Number(r.status)).sort()).toEqual([200]);
    expect(await db('holds').where('account_id', a.accountId)).toEqual([]);
    expect(await db('leases').where('account_id', a.accountId)).toEqual([]);
    expect((await verifyLedger(db)).problems.filter((p) => p.account_id === a.accountId)).toEqual([]);
  });

  test('SIGTERM: a request that arrived before it is served, even though its body was still being uploaded', async () => {
    const gw = await startProcess(writeConfig(SLOW.replace('latency_ms: 150', 'latency_ms: 0')), INFO);
    running.push(gw);
    const a = await account();
    const body = JSON.stringify({
      model: 'priced',
      messages: [{ role: 'user', content: 'x'.repeat(4000) }],
      max_tokens: 20,
    });
    const { port } = new URL(gw.url);
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: '/v1/chat/completions',
      method: 'POST',
      headers: {
        authorization: `Bearer ${a.secret}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      },
    });
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d) => (text += d)).on('end', () => resolve({ status: res.statusCode!, text }));
      });
      req.on('error', reject);
    });
    req.write(body.slice(0, 100)); // the headers and the start of the body: the key is checked, the rest is awaited
    await until(async () => (await db('api_keys').where('account_id', a.accountId).first()).last_used_at !== null); // checked
    gw.proc.kill('SIGTERM');
    await until(async () => gw.output().includes('shutting down'));
    req.end(body.slice(100));
    const res = await answered;
    expect(res).toMatchObject({ status: 200 });
    expect(JSON.parse(res.text).object).toBe('chat.completion');
    await gw.stop();
    expect(gw.proc.exitCode).toBe(0);
    expect(await db('usage_records').where({ account_id: a.accountId, status: 200 })).toHaveLength(1);
  });

  test('SIGTERM with shutdown_delay_ms: with nothing in flight the listener still answers 503 for the delay, then exit 0', async () => {
    const DELAY = 3000; // long enough for a loaded machine to log the signal and answer a few requests within half of it
    const gw = await startProcess(
      writeConfig(SLOW.replace('shutdown_grace_ms: 20000', `shutdown_grace_ms: 20000, shutdown_delay_ms: ${DELAY}`)),
      INFO,
    );
    running.push(gw);
    const a = await account();
    const exited = new Promise((r) => gw.proc.once('exit', r));
    const signalled = Date.now();
    gw.proc.kill('SIGTERM');
    await until(async () => gw.output().includes('shutting down'));
    expect(gw.output()).toContain(`"delay_ms":${DELAY}`);
    // No request in flight: without the delay the listener closed at once and these were refused connections (a
    // balancer's 502). With it, every request until the delay is over gets a clean 503 the client can act on.
    const answers: number[] = [];
    while (Date.now() - signalled < DELAY / 2) {
      answers.push((await chat(gw.url, a.secret)).status, (await fetch(`${gw.url}/readyz`)).status);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(answers.length).toBeGreaterThanOrEqual(2);
    expect(new Set(answers)).toEqual(new Set([503]));
    await exited;
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(DELAY);
    expect(gw.proc.exitCode).toBe(0);
    expect(gw.output()).toContain('stopped: settlements written, leases returned');
    expect(await db('usage_records').where('account_id', a.accountId)).toEqual([]); // nothing was served, nothing charged
  });

  test('SIGTERM: a stream still running when the grace period ends is cut and billed for what it sent; exit 0, nothing left held', async () => {
    const gw = await startProcess(
      writeConfig(`
limits: { rpm: 0, tpm: 0 }
server: { shutdown_grace_ms: 1500 }
providers: { up: { type: openai, base_url: "${up.url}" } }
models:
  - { id: priced, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: up, model: up-model } ] }
`),
      INFO,
    );
    running.push(gw);
    const a = await account();
    // The upstream sends the role and two words, then nothing more (as a generation that outlives the grace period).
    up.plan({ kind: 'stall', events: chatStreamEvents('up-model', ['Hello', ' there'], true, {}).slice(0, 3) });
    const stream = await chat(gw.url, a.secret, { stream: true });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let text = '';
    while (!text.includes(' there')) text += new TextDecoder().decode((await reader.read()).value);
    await gw.stop(); // SIGTERM; resolves when the process has exited
    expect(gw.proc.exitCode).toBe(0);
    // The client's stream ended (cut, or closed with an error event), it did not hang.
    for (;;) {
      const r = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (r.done) break;
      text += new TextDecoder().decode(r.value);
    }
    expect(text).not.toContain('data: [DONE]');
    expect(gw.output()).toContain('stopped: settlements written, leases returned');
    // Charged before the process exited: the two words it delivered, not the whole allowance, and nothing still held.
    const records = await db('usage_records').where('account_id', a.accountId);
    expect(records).toHaveLength(1);
    expect(Number(records[0].completion_tokens)).toBeGreaterThan(0);
    expect(Number(records[0].completion_tokens)).toBeLessThan(50);
    expect(await db('holds').where('account_id', a.accountId)).toEqual([]);
    expect(await db('leases').where('account_id', a.accountId)).toEqual([]);
    expect((await verifyLedger(db)).problems.filter((p) => p.account_id === a.accountId)).toEqual([]);
  });

  test('start-up says once which cache prices it derived from the provider, and warns once of a price below what it bills', async () => {
    const yaml = `
limits: { rpm: 0, tpm: 0 }
providers: { an: { type: anthropic, api_key: sk-ant-not-used } }
models:
  - { id: claude, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: an } ] }
  - { id: claude-cheap, kind: chat, price: { input: 3, output: 15, cache_write: 3 }, routes: [ { provider: an } ] }
  - { id: claude-1m, kind: chat, price: { input: 3, output: 15, tiers: [ { above_prompt_tokens: 200000, input: 6, output: 22.5 } ] }, routes: [ { provider: an } ] }
`;
    const gw = await startProcess(writeConfig(yaml), INFO, ['--workers', '2']);
    running.push(gw);
    await until(async () => (gw.output().match(/switchyard listening/g) ?? []).length === 2);
    const lines = (re: RegExp) =>
      gw
        .output()
        .split('\n')
        .filter((l) => re.test(l));
    expect(
      lines(/price\.cache_write of claude not set: 3\.75 USD per million tokens, what anthropic bills/),
    ).toHaveLength(1);
    expect(lines(/price\.cache_write_1h of claude not set: 6 USD per million tokens/)).toHaveLength(1);
    expect(lines(/price\.cached_input of claude not set: 0\.3 USD per million tokens/)).toHaveLength(1);
    const loss = lines(
      /price\.cache_write of claude-cheap is below what anthropic bills \(3\.75 USD per million tokens\)/,
    );
    expect(loss).toHaveLength(1);
    expect(JSON.parse(loss[0])).toMatchObject({
      level: 40,
      model: 'claude-cheap',
      class: 'cache_write',
      usd_per_million: '3',
      provider_bills: '3.75',
    });
    // A tier's cache prices come from its own input price.
    const tier = lines(
      /price\.cache_write of claude-1m above 200000 prompt tokens not set: 7\.5 USD per million tokens, what anthropic bills/,
    );
    expect(tier).toHaveLength(1);
    expect(JSON.parse(tier[0])).toMatchObject({
      level: 30,
      model: 'claude-1m',
      class: 'cache_write',
      above_prompt_tokens: 200000,
      usd_per_million: '7.5',
    });
  });

  test('SIGHUP: a stream in flight finishes at the old price, requests during the reload are all served, the next pays the new price; an invalid file is refused, naming the place, and the old configuration kept', async () => {
    const file = writeConfig(SLOW);
    const gw = await startProcess(file, INFO);
    running.push(gw);
    const a = await account();
    const record = async (requestId: string) => {
      await until(async () => (await db('usage_records').where('request_id', requestId)).length === 1);
      return (await db('usage_records').where('request_id', requestId).first())!;
    };
    /** µUSD per token: 0.15 / 0.60 USD per million tokens, then 15 / 60 after the reload; rounded up once. */
    const costAt = (r: any, input: number, output: number) =>
      Math.ceil((Number(r.prompt_tokens) * input + Number(r.completion_tokens) * output) / 1_000_000);
    const served = async (body: object = {}) => {
      const res = await chat(gw.url, a.secret, body);
      expect(res.status).toBe(200);
      await res.text();
      return record(res.headers.get('x-request-id')!);
    };
    // no SMTP server here: start-up said once where mail goes
    expect(
      gw
        .output()
        .match(/mail: no mail\.smtp_url configured; verification and password-reset links are written to this log/g),
    ).toHaveLength(1);
    const first = await served();
    expect(Number(first.cost_micros)).toBe(costAt(first, 150_000, 600_000));

    // A stream under way (the mock waits 150 ms before each piece) while the file changes and SIGHUP arrives.
    const stream = await chat(gw.url, a.secret, { stream: true });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    fs.writeFileSync(file, SLOW.replace('input: 0.15, output: 0.60', 'input: 15, output: 60'));
    gw.proc.kill('SIGHUP');
    const during = Array.from({ length: 10 }, () => served()); // sent as the reload happens: none is dropped
    await until(async () => gw.output().includes('configuration reloaded'));
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
    const streamed = await record(stream.headers.get('x-request-id')!);
    expect(Number(streamed.status)).toBe(200);
    expect(Number(streamed.cost_micros)).toBe(costAt(streamed, 150_000, 600_000)); // it started before the reload
    for (const r of await Promise.all(during))
      expect([costAt(r, 150_000, 600_000), costAt(r, 15_000_000, 60_000_000)]).toContain(Number(r.cost_micros));
    const second = await served();
    expect(Number(second.cost_micros)).toBe(costAt(second, 15_000_000, 60_000_000)); // the new price

    fs.writeFileSync(file, SLOW.replace('provider: local', 'provider: lokal'));
    gw.proc.kill('SIGHUP');
    await until(async () => gw.output().includes('configuration not reloaded'));
    // The line says which file, line and column, and what is wrong there.
    expect(gw.output()).toMatch(
      /"level":50,[^\n]*"err":"[^"\n]*switchyard\.yaml:6:\d+: models\[0\]\.routes\[0\]\.provider: unknown provider 'lokal'"[^\n]*configuration not reloaded/,
    );
    const third = await served(); // still served, at the last good configuration
    expect(Number(third.cost_micros)).toBe(costAt(third, 15_000_000, 60_000_000));
  });

  test("serve --workers 2: a worker that dies is replaced; both serve one port; the rate limit, the books and /metrics are the whole gateway's; SIGTERM stops them all", async () => {
    const gw = await startProcess(
      writeConfig(SLOW.replace('latency_ms: 150', 'latency_ms: 0')),
      { ...INFO, REDIS_URL: 'redis://127.0.0.1:6379', METRICS_TOKEN: '' },
      ['--workers', '2'],
    );
    running.push(gw);
    const listening = () => (gw.output().match(/switchyard listening/g) ?? []).length;
    await until(async () => listening() === 2); // the second may start a little later
    // A worker that dies is replaced.
    const workers = () =>
      fs.readFileSync(`/proc/${gw.proc.pid}/task/${gw.proc.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
    const [victim] = workers();
    process.kill(victim, 'SIGKILL');
    await until(async () => gw.output().includes('a worker stopped; starting another'));
    // Scrapes while the new worker starts are answered by the one that is ready.
    const scrapes: number[] = [];
    await until(async () => {
      scrapes.push((await fetch(`${gw.url}/metrics`)).status);
      return listening() === 3;
    });
    expect(scrapes.filter((s) => s !== 200)).toEqual([]);
    expect(workers()).toHaveLength(2);
    expect(workers()).not.toContain(victim);
    const START = 1_000_000;
    const a = await account(START);
    // All served (a failure lists what the others got). They are the key's first: each worker opens its lease meanwhile.
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        chat(gw.url, a.secret).then(async (r) => ({ status: r.status, body: await r.text() })),
      ),
    );
    expect(answers.filter((r) => r.status !== 200)).toEqual([]);
    // Each worker reserved money for this key in its own lease (the owner is host:pid): both served requests.
    const owners = new Set((await db('leases').where('account_id', a.accountId)).map((l) => l.owner));
    expect(owners.size).toBe(2);

    // A limit of 5 requests a minute holds across the workers (counted in Redis), not 5 per worker.
    const limited = await account(START, { rpmLimit: 5 });
    const burst = await Promise.all(
      Array.from({ length: 20 }, () => chat(gw.url, limited.secret).then((r) => r.status)),
    );
    expect(burst.filter((s) => s === 200)).toHaveLength(5);
    expect(burst.filter((s) => s === 429)).toHaveLength(15);

    // Whichever worker a scrape reaches, it reports both workers' requests.
    const served = async () => {
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('switchyard_http_requests_total{operation="createChatCompletion",status="200"} '));
      return Number(line?.split(' ')[1]);
    };
    await until(async () => (await served()) === 45);
    for (let i = 0; i < 6; i++) expect(await served()).toBe(45);

    await gw.stop();
    expect(gw.proc.exitCode).toBe(0);
    expect((gw.output().match(/stopped: settlements written/g) ?? []).length).toBe(2);
    for (const who of [a, limited]) {
      const records = await db('usage_records').where('account_id', who.accountId);
      expect(records).toHaveLength(who === a ? 40 : 5);
      const balance = Number((await db('accounts').where('id', who.accountId).first()).balance_micros);
      expect(START - balance).toBe(records.reduce((sum, r) => sum + Number(r.cost_micros), 0)); // each charged once
      expect(await db('leases').where('account_id', who.accountId)).toEqual([]);
      expect(await db('holds').where('account_id', who.accountId)).toEqual([]);
      expect((await verifyLedger(db)).problems.filter((p) => p.account_id === who.accountId)).toEqual([]);
    }
  });
});
