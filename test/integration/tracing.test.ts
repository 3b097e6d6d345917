/**
 * OpenTelemetry in the process (an in-memory exporter; test/integration/otel.test.ts exports from a real `switchyard
 * serve` over OTLP): with tracing on, a paid request is one trace — the request, its admission, a span per upstream
 * attempt (the failed route with its cause, then the one that answered), the settlement; with it off, no span at all.
 */
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { FakeOpenAI } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { tracing } from '../../src/tracing';

const exporter = new InMemorySpanExporter();
let up: FakeOpenAI;
let gw: TestGateway;

beforeAll(async () => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  up = await new FakeOpenAI().start();
  gw = await startGateway(`
limits: { rpm: 0, tpm: 0 }
providers:
  dead: { type: openai, base_url: "http://127.0.0.1:9/v1", timeouts: { connect_ms: 1000 } }
  up: { type: openai, base_url: "${up.url}" }
models:
  - { id: fallback, kind: chat, price: { input: 0.15, output: 0.60 }, routes: [ { provider: dead, model: m1 }, { provider: up, model: m2 } ] }
`);
});

afterAll(async () => {
  tracing.on = false;
  await gw?.close();
  await up?.close();
  trace.disable();
});

async function streamOnce(client: OpenAI): Promise<string> {
  const stream = await client.chat.completions.create({
    model: 'fallback',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  return text;
}

/** The finished spans once `n` have ended (the settlement's ends when its batch is written, a moment later). */
async function spans(n: number) {
  for (let i = 0; i < 100 && exporter.getFinishedSpans().length < n; i++) await new Promise((r) => setTimeout(r, 20));
  return exporter.getFinishedSpans();
}

test('off (the default): a paid request makes no span and sends no traceparent upstream', async () => {
  const client = new OpenAI({ apiKey: (await gw.newKey()).secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  expect(await streamOnce(client)).toBe('Echo: hi');
  await gw.app.billing.settled();
  expect(exporter.getFinishedSpans()).toEqual([]);
  expect(up.last().headers.traceparent).toBeUndefined();
});

test('on: request → admission, a span per attempt (the failed route with its cause), settlement: one trace', async () => {
  tracing.on = true; // what startTracing() does once the SDK is up
  exporter.reset();
  const client = new OpenAI({ apiKey: (await gw.newKey()).secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  expect(await streamOnce(client)).toBe('Echo: hi');
  const all = await spans(5);
  const byName = (name: string) => all.find((s) => s.name === name)!;
  const request = byName('POST /v1/chat/completions');
  expect(all.map((s) => s.name).sort()).toEqual(
    ['POST /v1/chat/completions', 'admission', 'chat m1', 'chat m2', 'settlement'].sort(),
  );
  for (const s of all) expect(s.spanContext().traceId).toBe(request.spanContext().traceId);
  for (const name of ['admission', 'chat m1', 'chat m2', 'settlement'])
    expect(byName(name).parentSpanContext?.spanId).toBe(request.spanContext().spanId);
  expect(byName('chat m1').attributes).toEqual({
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': 'm1',
    'gen_ai.provider.name': 'openai',
    'switchyard.model': 'fallback',
    'switchyard.provider': 'dead',
    'switchyard.route': 'dead/m1',
    'switchyard.fallback.index': 0,
    'error.type': 'connect',
  });
  expect(byName('chat m1').status).toEqual({ code: 2, message: 'connect' });
  expect(byName('chat m2').attributes).toMatchObject({
    'switchyard.route': 'up/m2',
    'switchyard.fallback.index': 1,
    'gen_ai.usage.input_tokens': 10,
    'gen_ai.usage.output_tokens': 2,
    'gen_ai.response.finish_reasons': ['stop'],
  });
  const sent = up.last().headers.traceparent;
  expect(sent).toBe(`00-${request.spanContext().traceId}-${byName('chat m2').spanContext().spanId}-01`);
  expect(byName('settlement').attributes).toMatchObject({ 'switchyard.settlement.mode': 'lease' });
  expect(byName('settlement').attributes['switchyard.cost_micro_usd']).toBe(
    request.attributes['switchyard.cost_micro_usd'],
  );
});
