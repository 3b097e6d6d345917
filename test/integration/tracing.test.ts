/**
 * OpenTelemetry: with an SDK registered (here an in-memory exporter; in production e.g. the OTLP exporter), every
 * upstream attempt is a span with the model, the route and, on failure, its cause; without one the API is a no-op.
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
  tracing.on = true; // what startTracing() does once the SDK is up
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
  await gw?.close();
  await up?.close();
  trace.disable();
  tracing.on = false;
});

test('a span per upstream attempt: the failed route with its cause, then the one that answered', async () => {
  const client = new OpenAI({ apiKey: (await gw.newKey()).secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'fallback',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  expect(text.length).toBeGreaterThan(0);
  const spans = exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, status: s.status }));
  console.log(JSON.stringify(spans, null, 1));
  expect(spans).toEqual([
    {
      name: 'upstream dead',
      attributes: { 'switchyard.model': 'fallback', 'switchyard.route': 'dead/m1' },
      status: { code: 2, message: 'connect' },
    },
    {
      name: 'upstream up',
      attributes: { 'switchyard.model': 'fallback', 'switchyard.route': 'up/m2' },
      status: { code: 0 },
    },
  ]);
});
