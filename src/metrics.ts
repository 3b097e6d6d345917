/**
 * Prometheus metrics (prom-client), one registry per running app (several apps in one test process do not mix).
 * The domain modules know nothing of this: the composition root (services/app.ts) feeds it from their callbacks
 * (a settled request, a failed upstream attempt) and reads their state when scraped (breakers, requests in flight,
 * the write-behind queue, the database pool). `GET /metrics` (src/http/ops.ts) serves `text()`.
 *
 * Under `serve --workers N` the port is shared, so a scrape reaches one worker at random: alone, its numbers would
 * jump from one scrape to the next. So a worker answers with the whole gateway's, which the primary process
 * gathers from every worker (summed up by prom-client's AggregatorRegistry.aggregate: counters and histograms added,
 * gauges as each says).
 */
import cluster, { type Worker } from 'node:cluster';
import client from 'prom-client';
import { errors } from './errors';
import { USAGE_CLASSES, countOf, type Usage } from './usage';

/** Latency buckets in seconds: a loopback upstream answers in milliseconds, an LLM in tens of seconds. */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** "prompt includes cached and cache_write; ...": which token classes count within which (usage.ts). */
const PARTS = USAGE_CLASSES.filter((w) => w.unit === 'token')
  .map((w) => [w.name, USAGE_CLASSES.filter((c) => c.partOf === w.name).map((c) => c.name)] as const)
  .filter(([, parts]) => parts.length)
  .map(([whole, parts]) => `${whole} includes ${parts.join(' and ')}`)
  .join('; ');

export class Metrics {
  readonly registry = new client.Registry();
  /** Every answer the HTTP server gave, by operation (operationId, or `other`) and status. */
  readonly requests = this.counter('switchyard_http_requests_total', 'HTTP answers, by operation and status', [
    'operation',
    'status',
  ]);
  readonly duration = this.histogram(
    'switchyard_http_request_duration_seconds',
    'Time from a request to its full answer (streams: to the last byte)',
    ['operation'],
  );
  /** One per request that reached billing (admitted), by the model asked for and the route that answered. */
  readonly upstream = this.counter(
    'switchyard_upstream_requests_total',
    'Admitted requests, by operation, model, route and status',
    ['operation', 'model', 'route', 'status'],
  );
  readonly latency = this.histogram(
    'switchyard_upstream_latency_seconds',
    'Admitted requests: time to the end of the answer',
    ['model', 'route'],
  );
  readonly ttfb = this.histogram(
    'switchyard_time_to_first_byte_seconds',
    'Admitted requests: time to the first byte of the answer',
    ['model', 'route'],
  );
  readonly upstreamErrors = this.counter(
    'switchyard_upstream_errors_total',
    'Failed upstream attempts, by route and cause (connect, timeout, status, protocol, aborted...)',
    ['route', 'cause'],
  );
  readonly tokens = this.counter('switchyard_tokens_total', `Tokens, by model and class (${PARTS})`, [
    'model',
    'class',
  ]);
  /** The usage classes counted in anything but tokens (images, seconds of audio, characters...). */
  readonly units = this.counter(
    'switchyard_usage_units_total',
    'Usage in units other than tokens, by model, class and unit',
    ['model', 'class', 'unit'],
  );
  /** Refusals counted in memory that could not be kept for the console (too many distinct counts at once). */
  readonly refusalsDropped = this.counter(
    'switchyard_refusals_dropped_total',
    'Refused calls not counted for the console: memory for distinct counts was full',
    [],
  );
  readonly spend = this.counter('switchyard_spend_micro_usd_total', 'Charged, in micro-USD, by model', ['model']);

  constructor() {
    client.collectDefaultMetrics({ register: this.registry }); // includes nodejs_eventloop_lag_seconds, heap, GC
    if (inGatewayCluster()) serveRegistry(this.registry);
  }

  /**
   * A gauge read when scraped. Across workers the values are summed, unless `aggregator` says otherwise ('max': a
   * state that any worker is in).
   */
  gauge(
    name: string,
    help: string,
    labelNames: string[],
    read: () => { labels?: Record<string, string>; value: number }[],
    aggregator: client.Aggregator = 'sum',
  ): void {
    new client.Gauge({
      name,
      help,
      labelNames,
      aggregator,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const { labels, value } of read()) labels ? this.set(labels, value) : this.set(value);
      },
    });
  }

  /** Counts a settled request's usage, each class under its name (usage.ts): tokens apart from the other units. */
  used(model: string, u: Usage): void {
    for (const c of USAGE_CLASSES) {
      const n = countOf(u, c);
      if (n <= 0) continue;
      if (c.unit === 'token') this.tokens.inc({ model, class: c.name }, n);
      else this.units.inc({ model, class: c.name, unit: c.unit }, n);
    }
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
// `serve --workers N`: a worker asks the primary, which collects the registry of every worker that listens and sums them up.

/** Set by `gatherWorkerMetrics`'s caller for the workers it forks (another supervisor's workers answer alone). */
export const CLUSTER_ENV = 'SWITCHYARD_CLUSTER_WORKER';
const inGatewayCluster = () => cluster.isWorker && process.env[CLUSTER_ENV] === '1' && !!process.send;

/** Worker → primary: a scrape wants the whole gateway's metrics; the worker's registry. Primary → worker: the reverse. */
type Message =
  | { type: 'switchyard:metrics?'; id: number }
  | { type: 'switchyard:metrics'; id: number; text?: string; error?: string }
  | { type: 'switchyard:registry?'; id: number }
  | { type: 'switchyard:registry'; id: number; metrics?: RegistryJson; error?: string };

/** A worker's registry as prom-client sends it between processes. */
type RegistryJson = Awaited<ReturnType<client.Registry['getMetricsAsJSON']>>;

/** How long the primary waits for a worker's registry, and a worker for the primary's answer (a little longer). */
const REGISTRY_WAIT_MS = 5_000;
const ANSWER_WAIT_MS = 7_000;

/** To the primary; dropped once the channel is closed (the primary is gone: this worker is going too). */
function send(m: Message): void {
  process.send!(m, undefined, undefined, () => undefined);
}

/** Waits for the answer to request `id`, up to `ms`. */
function waiter<T>(pending: Map<number, (a: T) => void>, id: number, ms: number, timedOut: T): Promise<T> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(timedOut), ms);
    const done = (a: T) => {
      clearTimeout(timer);
      pending.delete(id);
      resolve(a);
    };
    pending.set(id, done);
  });
}

let ids = 0;
const answers = new Map<number, (m: { text?: string; error?: string }) => void>();

/** In a worker: the primary may read its registry from now on; the primary's answers reach `fromPrimary`. */
function serveRegistry(registry: client.Registry): void {
  process.on('message', (m: Message) => {
    if (m?.type === 'switchyard:metrics') answers.get(m.id)?.(m);
    if (m?.type !== 'switchyard:registry?') return;
    registry.getMetricsAsJSON().then(
      (metrics) => send({ type: 'switchyard:registry', id: m.id, metrics }),
      (e: Error) => send({ type: 'switchyard:registry', id: m.id, error: e.message }),
    );
  });
}

/** In a worker: the whole gateway's metrics, from the primary; a 503 when it cannot gather them. */
async function fromPrimary(): Promise<string> {
  const id = ++ids;
  const answer = waiter<{ text?: string; error?: string }>(answers, id, ANSWER_WAIT_MS, {
    error: 'the primary process did not answer',
  });
  send({ type: 'switchyard:metrics?', id });
  const { text, error } = await answer;
  if (error !== undefined || text === undefined) throw errors.unavailable(); // the scrape fails; the next one may not
  return text;
}

/**
 * In the primary process of `serve --workers N`: answers a worker's request with the metrics of every worker that
 * listens (counters and histograms summed, gauges as each one says). One still starting is left out: it serves
 * nothing yet, and it may be too busy (compiling the contract's validators) to answer. A worker that listens and
 * does not answer makes the scrape fail rather than drop its counts. The workers must be forked with `CLUSTER_ENV=1`.
 */
export function gatherWorkerMetrics(): void {
  const ready = new Set<Worker>();
  const registries = new Map<number, (m: { metrics?: RegistryJson; error?: string }) => void>();
  let asked = 0;
  const collect = async (): Promise<string> => {
    const all = await Promise.all(
      [...ready]
        .filter((w) => w.isConnected())
        .map((w) => {
          const id = ++asked;
          const answer = waiter<{ metrics?: RegistryJson; error?: string }>(registries, id, REGISTRY_WAIT_MS, {
            error: `worker ${w.process.pid} did not answer`,
          });
          w.send({ type: 'switchyard:registry?', id } satisfies Message);
          return answer;
        }),
    );
    const failed = all.find((a) => a.error !== undefined || !a.metrics);
    if (failed) throw new Error(failed.error);
    return client.AggregatorRegistry.aggregate(all.map((a) => a.metrics!)).metrics();
  };
  cluster.on('message', (worker: Worker, m: Message) => {
    if (m?.type === 'switchyard:registry') registries.get(m.id)?.(m);
    else if (m?.type === 'switchyard:metrics?') {
      const reply = (a: { text?: string; error?: string }) =>
        worker.send({ type: 'switchyard:metrics', id: m.id, ...a } satisfies Message, undefined, () => undefined); // one that left needs no answer
      collect().then(
        (text) => reply({ text }),
        (e: Error) => reply({ error: e.message }),
      );
    }
  });
  cluster.on('listening', (worker) => ready.add(worker));
  cluster.on('exit', (worker) => ready.delete(worker));
}
