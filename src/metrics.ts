/**
 * Prometheus metrics (prom-client), one registry per running app (several apps in one test process do not mix).
 * The domain modules know nothing of this: the composition root (services/app.ts) feeds it from their callbacks
 * (a settled request, a failed upstream attempt) and reads their state when scraped (breakers, requests in flight,
 * the write-behind queue, the database pool). `GET /metrics` (src/http/ops.ts) serves `text()`.
 *
 * Under `serve --workers N` the port is shared, so a scrape reaches one worker at random: alone, its numbers would
 * jump from one scrape to the next. So a worker answers with the whole gateway's, which the primary process
 * gathers from every worker (prom-client's AggregatorRegistry: counters and histograms summed, gauges as each says).
 */
import cluster from 'node:cluster';
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
    if (inGatewayCluster()) {
      // The primary asks each worker for its registry (prom-client's own messages over the cluster's channel).
      client.AggregatorRegistry.setRegistries(this.registry);
      new client.AggregatorRegistry();
    }
  }

  /**
   * A gauge read when scraped. Across workers the values are summed, unless `aggregator` says otherwise ('max': a
   * state that any worker is in).
   */
  gauge(name: string, help: string, labelNames: string[], read: () => { labels?: Record<string, string>; value: number }[], aggregator: client.Aggregator = 'sum'): void {
    new client.Gauge({
      name,
      help,
      labelNames,
      aggregator,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const { labels, value } of read()) (labels ? this.set(labels, value) : this.set(value));
      },
    });
  }

  /** The Prometheus text: this process's metrics, or a worker's view of the whole gateway (see the top). */
  text(): Promise<string> {
    return inGatewayCluster() ? fromPrimary() : this.registry.metrics();
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

// ---------------------------------------------------------------------------------------------------------------
// `serve --workers N`: a worker asks the primary, which gathers every worker's metrics.

/** Set by `gatherWorkerMetrics`'s caller for the workers it forks (another supervisor's workers answer alone). */
export const CLUSTER_ENV = 'SWITCHYARD_CLUSTER_WORKER';
const inGatewayCluster = () => cluster.isWorker && process.env[CLUSTER_ENV] === '1' && !!process.send;

const ASK = 'switchyard:metrics?';
const ANSWER = 'switchyard:metrics';
/** How long a worker waits for the primary's answer (prom-client gives up on a silent worker after 5 s). */
const PRIMARY_WAIT_MS = 10_000;

interface Answer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  error?: string;
}

const waiting = new Map<number, (a: Answer) => void>();
let asked = 0;

function fromPrimary(): Promise<string> {
  if (!asked) process.on('message', (m: Answer) => m?.type === ANSWER && waiting.get(m.id)?.(m));
  const id = ++asked;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => answer({ type: ANSWER, id, error: 'the primary process did not answer' }), PRIMARY_WAIT_MS);
    const answer = (a: Answer) => {
      clearTimeout(timer);
      waiting.delete(id);
      if (a.error !== undefined) reject(new Error(`metrics of the workers: ${a.error}`));
      else resolve(a.text ?? '');
    };
    waiting.set(id, answer);
    process.send!({ type: ASK, id });
  });
}

/**
 * In the primary process of `serve --workers N`: answers each worker's request with every worker's metrics. The
 * workers must be forked with `CLUSTER_ENV=1` in their environment.
 */
export function gatherWorkerMetrics(): void {
  const registry = new client.AggregatorRegistry();
  cluster.on('message', (worker, m: { type?: string; id?: number }) => {
    if (m?.type !== ASK) return;
    const reply = (a: Omit<Answer, 'type' | 'id'>) => worker.send({ type: ANSWER, id: m.id, ...a }, undefined, () => undefined); // a worker that left needs no answer
    registry.clusterMetrics().then(
      (text) => reply({ text }),
      (e: Error) => reply({ error: e.message }),
    );
  });
}
