/**
 * OpenTelemetry, end to end: `switchyard serve` in a child process with OTEL_EXPORTER_OTLP_ENDPOINT pointed at a real
 * OTLP/HTTP receiver on loopback (OTLP/JSON), and a fake OpenAI upstream. A chat request is one trace — the request
 * (continuing the caller's traceparent), its admission, the upstream attempt (whose traceparent the upstream
 * received), the settlement — with the GenAI attributes and the real token counts; a stream likewise; a fallback has
 * two attempts, the first failed with its cause. No attribute carries the key or the prompt. SIGTERM flushes.
 * Runs on DATABASE_URL (SQLite, MariaDB, PostgreSQL).
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import { createAccount } from '../../src/accounts/accounts';
import { createKey } from '../../src/accounts/keys';
import { connect } from '../../src/db';
import { FakeOpenAI } from '../fakes/openaiUpstream';
import { startProcess, writeConfig, type GatewayProcess } from '../helpers/process';

jest.setTimeout(90_000);

/** A span as the receiver decoded it from OTLP/JSON. */
interface Got {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  status: { code?: number; message?: string };
  attributes: Record<string, unknown>;
}

/** OTLP span kinds and status codes (the protocol's numbers). */
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

/** An OTLP/HTTP receiver: POST /v1/traces with OTLP/JSON bodies; keeps every span, the resources and the headers. */
class Receiver {
  readonly spans: Got[] = [];
  readonly resources: Record<string, unknown>[] = [];
  readonly headers: http.IncomingHttpHeaders[] = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        this.headers.push(req.headers);
        this.take(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  url = '';

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }

  private take(body: any): void {
    for (const rs of body.resourceSpans ?? []) {
      this.resources.push(attributes(rs.resource?.attributes));
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          this.spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            name: s.name,
            kind: s.kind,
            status: s.status ?? {},
            attributes: attributes(s.attributes),
          });
    }
  }

  /** The spans of one trace, once `ok` holds for them (the exporter sends batches every 100 ms here). */
  async trace(traceId: () => string | undefined, ok: (spans: Got[]) => boolean): Promise<Got[]> {
    for (let i = 0; i < 300; i++) {
      const id = traceId();
      const spans = this.spans.filter((s) => s.traceId === id);
      if (id && ok(spans)) return spans;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`the trace did not arrive: ${JSON.stringify(this.spans, null, 1)}`);
  }
}

/** OTLP's key-value list as an object (values as they were set: strings, numbers, arrays). */
function attributes(list: { key: string; value: any }[] = []): Record<string, unknown> {
  const value = (v: any): unknown =>
    v.stringValue ??
    (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
    v.doubleValue ??
    v.boolValue ??
    (v.arrayValue ? (v.arrayValue.values ?? []).map(value) : undefined);
  return Object.fromEntries(list.map((a) => [a.key, value(a.value)]));
}

const PROMPT = `the words of a prompt ${crypto.randomUUID()}`;
let db: Knex;
let up: FakeOpenAI;
let receiver: Receiver;
let gw: GatewayProcess;
let configFile: string;
let secret: string;
let accountId: number;
let keyId: number;

beforeAll(async () => {
  db = connect(process.env.DATABASE_URL);
  up = await new FakeOpenAI().start();
  receiver = await new Receiver().start();
  const a = await createAccount(db, `otel-${crypto.randomUUID()}@example.com`, 10_000_000);
  const key = await createKey(db, { accountId: a.id });
  [secret, accountId, keyId] = [key.secret, a.id, key.key.id];
  const config = `
limits: { rpm: 0, tpm: 0 }
providers:
  dead: { type: openai, base_url: "http://127.0.0.1:9/v1", timeouts: { connect_ms: 1000 } }
  up: { type: openai, base_url: "${up.url}" }
models:
  - { id: priced, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: up, model: up-model } ] }
  - { id: fallback, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: dead, model: m1 }, { provider: up, model: m2 } ] }
`;
  configFile = writeConfig(config);
  gw = await startProcess(configFile, otelEnv('100'));
});

/** The gateway's OTEL_* settings: this receiver, OTLP/JSON, a collector's header, batches every `delayMs`. */
const otelEnv = (delayMs: string) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=collector-secret',
  OTEL_BSP_SCHEDULE_DELAY: delayMs,
  OTEL_SERVICE_NAME: '',
});

afterAll(async () => {
  await gw?.stop('SIGKILL');
  await db?.destroy();
  await up?.close();
  await receiver?.close();
});

const chat = (body: object, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'priced', messages: [{ role: 'user', content: PROMPT }], max_tokens: 50, ...body }),
  });

const named = (spans: Got[], name: string) => spans.filter((s) => s.name === name);
const one = (spans: Got[], name: string) => {
  const found = named(spans, name);
  expect(found).toHaveLength(1);
  return found[0];
};
const complete = (attempts: number) => (spans: Got[]) =>
  spans.length === 3 + attempts && spans.some((s) => s.name === 'settlement');

/** The trace id the upstream's last request carried, with the parent span it names. */
function upstreamParent(): { traceId: string; spanId: string } {
  const [, traceId, spanId] = String(up.last().headers.traceparent).split('-');
  return { traceId, spanId };
}

test('a chat request: request → admission, the attempt, settlement; the caller trace continued and sent upstream', async () => {
  const callerTrace = crypto.randomBytes(16).toString('hex');
  const callerSpan = crypto.randomBytes(8).toString('hex');
  const res = await chat({}, { traceparent: `00-${callerTrace}-${callerSpan}-01`, tracestate: 'caller=1' });
  expect(res.status).toBe(200);
  const answer = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
  const spans = await receiver.trace(() => callerTrace, complete(1));
  const request = one(spans, 'POST /v1/chat/completions');
  expect(request).toMatchObject({ kind: SERVER, parentSpanId: callerSpan });
  const attempt = one(spans, 'chat up-model');
  for (const s of [one(spans, 'admission'), attempt, one(spans, 'settlement')])
    expect(s.parentSpanId).toBe(request.spanId);
  // the upstream was told the attempt's span, in the caller's trace, with the caller's tracestate
  expect(upstreamParent()).toEqual({ traceId: callerTrace, spanId: attempt.spanId });
  expect(up.last().headers.tracestate).toBe('caller=1');
  expect(request.attributes).toMatchObject({
    'http.request.method': 'POST',
    'http.route': '/v1/chat/completions',
    'http.response.status_code': 200,
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': 'priced',
    'gen_ai.response.model': 'priced',
    'gen_ai.request.max_tokens': 50,
    'gen_ai.usage.input_tokens': answer.usage.prompt_tokens,
    'gen_ai.usage.output_tokens': answer.usage.completion_tokens,
    'switchyard.account.id': accountId,
    'switchyard.key.id': keyId,
    'switchyard.provider': 'up',
  });
  expect(attempt).toMatchObject({
    kind: CLIENT,
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'up-model',
      'gen_ai.response.model': 'up-model',
      'gen_ai.request.max_tokens': 50,
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': answer.usage.completion_tokens,
      'gen_ai.response.finish_reasons': ['stop'],
      'http.response.status_code': 200,
      'switchyard.route': 'up/up-model',
      'switchyard.fallback.index': 0,
    },
  });
  // what it cost, in micro-USD, is what the ledger charged
  const record = await db('usage_records').where({ account_id: accountId }).orderBy('id', 'desc').first();
  const cost = one(spans, 'settlement').attributes['switchyard.cost_micro_usd'];
  expect(cost).toBe(Number(record.cost_micros));
  expect(cost).toBeGreaterThan(0);
  expect(request.attributes['switchyard.cost_micro_usd']).toBe(cost);
  expect(receiver.resources[0]['service.name']).toBe('switchyard');
  expect(receiver.headers[0]['x-collector-token']).toBe('collector-secret'); // OTEL_EXPORTER_OTLP_HEADERS
});

test('a stream: one trace, the attempt with the usage the upstream reported', async () => {
  const res = await chat({ stream: true, stream_options: { include_usage: true } });
  expect(res.status).toBe(200);
  const text = await res.text();
  const usage = text
    .split('\n\n')
    .map((f) => f.replace(/^data: /, ''))
    .filter((f) => f.startsWith('{'))
    .map((f) => JSON.parse(f).usage)
    .find(Boolean);
  const spans = await receiver.trace(() => upstreamParent().traceId, complete(1));
  const request = one(spans, 'POST /v1/chat/completions');
  expect(request.parentSpanId).toBe(''); // no caller trace: a new one
  const attempt = one(spans, 'chat up-model');
  expect(upstreamParent().spanId).toBe(attempt.spanId);
  expect(attempt.attributes).toMatchObject({
    'gen_ai.usage.input_tokens': usage.prompt_tokens,
    'gen_ai.usage.output_tokens': usage.completion_tokens,
    'gen_ai.response.finish_reasons': ['stop'],
  });
  expect(request.attributes).toMatchObject({
    'gen_ai.usage.input_tokens': usage.prompt_tokens,
    'gen_ai.usage.output_tokens': usage.completion_tokens,
    'http.response.status_code': 200,
  });
  expect(one(spans, 'settlement').parentSpanId).toBe(request.spanId);
});

test('a fallback: two attempts, the first failed with its cause, the second answered', async () => {
  const res = await chat({ model: 'fallback' });
  expect(res.status).toBe(200);
  const spans = await receiver.trace(() => upstreamParent().traceId, complete(2));
  const request = one(spans, 'POST /v1/chat/completions');
  const [failed, answered] = [one(spans, 'chat m1'), one(spans, 'chat m2')];
  expect(failed).toMatchObject({
    kind: CLIENT,
    parentSpanId: request.spanId,
    status: { code: ERROR, message: 'connect' },
    attributes: { 'error.type': 'connect', 'switchyard.route': 'dead/m1', 'switchyard.fallback.index': 0 },
  });
  expect(answered.status.code ?? 0).not.toBe(ERROR);
  expect(answered.attributes).toMatchObject({ 'switchyard.route': 'up/m2', 'switchyard.fallback.index': 1 });
  expect(upstreamParent().spanId).toBe(answered.spanId);
});

test('a refused request: its admission span says why; no attribute anywhere carries the key or the prompt', async () => {
  const res = await chat({ model: 'nope' });
  expect(res.status).toBe(400);
  const refused = () => receiver.spans.find((s) => s.attributes['error.type'] === 'model_not_found')?.traceId;
  const spans = await receiver.trace(refused, (s) => s.length === 2);
  expect(one(spans, 'admission').attributes['error.type']).toBe('model_not_found');
  const everything = JSON.stringify([receiver.spans, receiver.resources]);
  expect(everything).not.toContain(secret);
  expect(everything).not.toContain(secret.slice(-12));
  expect(everything).not.toContain(PROMPT.slice(-36));
  expect(everything).not.toContain('@example.com');
  expect(everything).not.toContain('collector-secret');
  expect(receiver.resources[0]).not.toHaveProperty('process.command_args');
});

test('SIGTERM: the spans still batched are flushed before the process exits', async () => {
  await gw.stop('SIGKILL');
  gw = await startProcess(configFile, otelEnv('600000')); // batches every 10 minutes: only the shutdown's flush sends them
  const before = receiver.spans.length;
  expect((await chat({})).status).toBe(200);
  await new Promise((r) => setTimeout(r, 300));
  expect(receiver.spans.length).toBe(before);
  await gw.stop();
  expect(gw.proc.exitCode).toBe(0);
  const spans = receiver.spans.slice(before).filter((s) => s.traceId === upstreamParent().traceId);
  expect(spans.map((s) => s.name).sort()).toEqual(
    ['POST /v1/chat/completions', 'admission', 'chat up-model', 'settlement'].sort(),
  );
});
