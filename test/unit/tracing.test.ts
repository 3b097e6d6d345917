/**
 * Tracing's switch and its readers: on only with an OTLP endpoint (and not disabled), off leaves the SDK unloaded;
 * the traceparent sent upstream; finish reasons read from every wire's answers and chunks.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { trace, TraceFlags, type Span } from '@opentelemetry/api';
import { finishReasons, tracing, tracingWanted, traceHeaders } from '../../src/tracing';

test('traces are wanted with an OTLP endpoint only, and not when the SDK or the trace exporter is turned off', () => {
  expect(tracingWanted({})).toBe(false);
  expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toBe(false);
  expect(tracingWanted({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBe(false);
  expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
  expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
  expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' })).toBe(false);
  expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
});

/** In a process of its own: startTracing with `env`, then which OpenTelemetry packages that process has loaded. */
function loadedWith(env: Record<string, string>): { on: boolean; packages: string[] } {
  const script = `
    const t = require('./src/tracing');
    t.startTracing(${JSON.stringify(env)}).then(async (on) => {
      const packages = [...new Set(Object.keys(require.cache).flatMap((m) => m.match(/@opentelemetry\\/[^/]+/g) ?? []))];
      const started = on && t.tracing.on;
      await t.stopTracing(100);
      process.stdout.write(JSON.stringify({ on: started, packages }));
    });`;
  const out = execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], {
    cwd: path.join(__dirname, '..', '..'),
    env: { PATH: process.env.PATH },
  });
  return JSON.parse(out.toString());
}

test('off: nothing of the SDK is loaded (only the API); on: the SDK, started', () => {
  expect(loadedWith({})).toEqual({ on: false, packages: ['@opentelemetry/api'] });
  const on = loadedWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
  expect(on.on).toBe(true);
  expect(on.packages).toEqual(expect.arrayContaining(['@opentelemetry/sdk-node', '@opentelemetry/sdk-trace-base']));
  expect(tracing.on).toBe(false); // this process: never started
});

test("the upstream's traceparent names the attempt's span, its sampling flag and the caller's tracestate", () => {
  const context = {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: TraceFlags.SAMPLED,
  };
  expect(traceHeaders(trace.wrapSpanContext(context))).toEqual({
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  });
  const unsampled = trace.wrapSpanContext({ ...context, traceFlags: TraceFlags.NONE });
  expect(traceHeaders(unsampled).traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00');
  const withState = {
    spanContext: () => ({ ...context, traceState: { serialize: () => 'vendor=1' } }),
  } as unknown as Span;
  expect(traceHeaders(withState)).toEqual({
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    tracestate: 'vendor=1',
  });
});

test('finish reasons of OpenAI, Anthropic and Responses answers and chunks; nothing from anything else', () => {
  expect(finishReasons({ choices: [{ finish_reason: 'stop' }, { finish_reason: 'length' }] })).toEqual([
    'stop',
    'length',
  ]);
  expect(finishReasons({ choices: [{ delta: { content: 'hi' }, finish_reason: null }] })).toEqual([]);
  expect(finishReasons({ type: 'message', stop_reason: 'end_turn' })).toEqual(['end_turn']);
  expect(finishReasons({ type: 'message_delta', delta: { stop_reason: 'tool_use' } })).toEqual(['tool_use']);
  expect(finishReasons({ type: 'response.completed', response: { status: 'completed' } })).toEqual(['completed']);
  expect(finishReasons({ type: 'response.created', response: { status: 'in_progress' } })).toEqual([]);
  expect(finishReasons(null)).toEqual([]);
  expect(finishReasons('data')).toEqual([]);
  expect(finishReasons(new Uint8Array(4))).toEqual([]);
});
