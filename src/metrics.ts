/**
 * Prometheus metrics (prom-client), one registry per running app (several apps in one test process do not mix).
 * The domain modules know nothing of this: the composition root (services/app.ts) feeds it from their callbacks
 * (a settled request, a failed upstream attempt) and reads their state when scraped (breakers, requests in flight,
 * the write-behind queue, the database pool). `GET /metrics` (src/http/ops.ts) serves `text()`.
 */
import client from 'prom-client';

/** Latency buckets in seconds: a loopback upstream answers in milliseconds, an LLM in tens of seconds. */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export type TokenClass = 'prompt' | 'completion' | 'cached' | 'cache_write' | 'reasoning';

export class Metrics {
  readonly registry = new client.Registry();
  /** Every answer the HTTP server gave, by operation (operationId, or `other`) and status. */
  readonly requests = this.counter('switchyard_http_requests_total', 'HTTP answers, by operation and status', ['operation', 'status']);
  readonly duration = this.histogram('switchyard_http_request_duration_seconds', 'Time from a request to its full answer (streams: to the last byte)', ['operation']);
  /** One per request that reached billing (admitted), by the model asked for and the route that answered. */
  readonly upstream = this.counter('switchyard_upstream_requests_total', 'Admitted requests, by operation, model, route and status', ['operation', 'model', 'route', 'status']);
  readonly latency = this.histogram('switchyard_upstream_latency_seconds', 'Admitted requests: time to the end of the answer', ['model', 'route']);
  readonly ttfb = this.histogram('switchyard_time_to_first_byte_seconds', 'Admitted requests: time to the first byte of the answer', ['model', 'route']);
  readonly upstreamErrors = this.counter('switchyard_upstream_errors_total', 'Failed upstream attempts, by route and cause (connect, timeout, status, protocol, aborted...)', ['route', 'cause']);
  readonly tokens = this.counter('switchyard_tokens_total', 'Tokens, by model and class (prompt includes cached and cache_write; completion includes reasoning)', ['model', 'class']);
  readonly spend = this.counter('switchyard_spend_micro_usd_total', 'Charged, in micro-USD, by model', ['model']);

  constructor() {
    client.collectDefaultMetrics({ register: this.registry }); // includes nodejs_eventloop_lag_seconds, heap, GC
  }

  /** A gauge read when scraped. */
  gauge(name: string, help: string, labelNames: string[], read: () => { labels?: Record<string, string>; value: number }[]): void {
    new client.Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const { labels, value } of read()) (labels ? this.set(labels, value) : this.set(value));
      },
    });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private counter(name: string, help: string, labelNames: string[]): client.Counter {
    return new client.Counter({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram(name: string, help: string, labelNames: string[]): client.Histogram {
    return new client.Histogram({ name, help, labelNames, buckets: SECONDS, registers: [this.registry] });
  }
}
