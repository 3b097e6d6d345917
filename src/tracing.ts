/**
 * OpenTelemetry traces, built in and off by default. With `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, `switchyard serve` loads the Node SDK and exports over OTLP (the standard
 * `OTEL_*` variables apply: protocol, headers, sampler, service name, batch delays); otherwise the SDK is never
 * loaded and `tracing.on` stays false.
 *
 * A paid request is one trace: its SERVER span (continued from the caller's `traceparent`), the admission (key check,
 * limits, hold), a CLIENT span per upstream attempt (its `traceparent` sent upstream) and the settlement, which ends
 * when the request's usage record is written. Attributes follow the GenAI semantic conventions (`gen_ai.*`) plus
 * `switchyard.*` ones; they never carry a prompt, an answer, a key, a credential or an email.
 *
 * Why one boolean: the paid path's budget is a few hundred microseconds. Off, nothing here runs but that check (or
 * the check of a RequestTrace it made, which then is undefined): no span objects, no context, no header parsing.
 */
import {
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { Usage } from './usage';

/** The one switch: true once the SDK is started (or a test registered a provider and set it). */
export const tracing = { on: false };

/** A ProxyTracer: it follows whichever provider is registered globally, now or later. */
const tracer = trace.getTracer('switchyard');

let sdk: { shutdown(): Promise<void> } | null = null;

/** Whether the environment asks for traces: an OTLP endpoint, and neither `OTEL_SDK_DISABLED` nor `OTEL_TRACES_EXPORTER=none`. */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()) return false;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return env.OTEL_TRACES_EXPORTER?.trim() !== 'none';
}

/**
 * Starts the SDK when the environment asks for traces; returns whether it did. Loaded here, lazily: with tracing off
 * none of it is in memory. Traces only: no metrics or logs exporters (Prometheus has the metrics, pino the logs) and
 * no auto-instrumentation (the spans are our own; instrumenting HTTP, undici and the database drivers would cost CPU
 * on every paid request). The exporter follows `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL` (http/protobuf by default).
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (sdk || !tracingWanted(env)) return false;
  const { NodeSDK, resources } = await import('@opentelemetry/sdk-node');
  const started = new NodeSDK({
    // service.name is "switchyard" unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise (the env detector wins).
    resource: resources.defaultResource().merge(resources.resourceFromAttributes({ 'service.name': 'switchyard' })),
    // Not the process detector, unless asked for: it exports the command line, which may carry a database URL.
    ...(!env.OTEL_NODE_RESOURCE_DETECTORS && { resourceDetectors: [resources.envDetector, resources.hostDetector] }),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  started.start();
  sdk = started;
  tracing.on = true;
  return true;
}

/** Flushes the spans not yet exported and stops the SDK (shutdown), waiting at most `ms` for the collector. */
export async function stopTracing(ms = 5_000): Promise<void> {
  if (!sdk) return;
  const stopping = sdk.shutdown().catch(() => undefined);
  sdk = null;
  tracing.on = false;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([stopping, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

/** The GenAI token counts of a usage (cache and reasoning classes when there are any). */
export function usageAttributes(u: Usage): Attributes {
  const a: Attributes = { 'gen_ai.usage.input_tokens': u.prompt, 'gen_ai.usage.output_tokens': u.completion };
  if (u.cached) a['gen_ai.usage.cache_read.input_tokens'] = u.cached;
  if (u.cacheWrite) a['gen_ai.usage.cache_creation.input_tokens'] = u.cacheWrite;
  if (u.reasoning) a['gen_ai.usage.reasoning.output_tokens'] = u.reasoning;
  return a;
}

/**
 * Why a generation ended, read from an answer or a chunk of any wire: OpenAI's `choices[].finish_reason`,
 * Anthropic's `stop_reason` (of a message, or of a `message_delta` event), a Responses object's `status`.
 */
export function finishReasons(x: unknown, into: string[] = []): string[] {
  const o = x as {
    choices?: { finish_reason?: unknown }[];
    stop_reason?: unknown;
    delta?: { stop_reason?: unknown };
    response?: { status?: unknown };
  } | null;
  if (!o || typeof o !== 'object') return into;
  if (Array.isArray(o.choices))
    for (const c of o.choices) if (typeof c?.finish_reason === 'string') into.push(c.finish_reason);
  if (typeof o.stop_reason === 'string') into.push(o.stop_reason);
  if (typeof o.delta?.stop_reason === 'string') into.push(o.delta.stop_reason);
  if (typeof o.response?.status === 'string' && o.response.status !== 'in_progress') into.push(o.response.status);
  return into;
}

/** The W3C trace-context headers that make the upstream's spans children of `span`. */
export function traceHeaders(span: Span): Record<string, string> {
  const c = span.spanContext();
  const headers: Record<string, string> = {
    traceparent: `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, '0')}`,
  };
  const state = c.traceState?.serialize();
  if (state) headers.tracestate = state;
  return headers;
}

/** An error's type for `error.type`: its code (ours are stable strings), else its class. */
export function errorType(e: unknown): string {
  const code = (e as { code?: unknown })?.code;
  if (typeof code === 'string' && code) return code;
  return (e as Error)?.name || 'error';
}

/**
 * One request's trace: its SERVER span and context (children hang from it), and the admission, whose span is made
 * once the hold is taken (or the request refused), from the moment the caller's check began.
 */
export class RequestTrace {
  readonly span: Span;
  readonly context: Context;
  private readonly started = performance.now();
  private admission: 'pending' | 'done' | 'none' = 'none';
  /** gen_ai.operation.name, once the request is known to be a paid one (Metered). */
  operation = '';
  /** The client's model id. */
  model = '';

  /** `headers`: the request's (a `traceparent` there is continued, per the registered propagator). */
  constructor(headers: Record<string, unknown>, name: string, attributes: Attributes) {
    const parent = propagation.extract(ROOT_CONTEXT, headers);
    this.span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
    this.context = trace.setSpan(parent, this.span);
  }

  /** The caller is a key whose request may be admitted (held for): an admission span follows. */
  admitting(): void {
    this.admission = 'pending';
  }

  /** The admission is over: admitted (`attributes`: what was held), or refused with `e`. */
  admitted(attributes: Attributes | null, e?: unknown): void {
    if (this.admission !== 'pending') return;
    this.admission = 'done';
    const span = tracer.startSpan('admission', { startTime: this.started, attributes: attributes ?? {} }, this.context);
    if (e !== undefined) fail(span, e);
    span.end();
  }

  /** A span under the request's (the settlement). */
  child(name: string, attributes: Attributes, kind: SpanKind = SpanKind.INTERNAL): Span {
    return tracer.startSpan(name, { kind, attributes }, this.context);
  }

  /** The span of one upstream attempt (GenAI's inference span: `{operation} {upstream model}`). */
  attempt(upstreamModel: string, attributes: Attributes): Span {
    const operation = this.operation || 'chat';
    return tracer.startSpan(
      `${operation} ${upstreamModel}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': operation,
          'gen_ai.request.model': upstreamModel,
          'switchyard.model': this.model,
          ...attributes,
        },
      },
      this.context,
    );
  }

  /** The request is over: its status (5xx an error, as for any server span) and how it ended. */
  end(status: number, attributes: Attributes, error?: string): void {
    if (this.admission === 'pending') this.admitted(null, error);
    this.span.setAttributes(attributes);
    this.span.setAttribute('http.response.status_code', status);
    if (error) this.span.setAttribute('error.type', error);
    if (status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error ?? String(status) });
    this.span.end();
  }
}

/** Marks a span failed with `e`: `error.type` and an error status (never the error's message: it may quote input). */
export function fail(span: Span, e: unknown, status?: number): void {
  const type = typeof e === 'string' ? e : typeof e === 'number' ? String(e) : errorType(e);
  span.setAttribute('error.type', type);
  if (status) span.setAttribute('http.response.status_code', status);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

export type { Span };
