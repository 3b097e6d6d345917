/**
 * The generic path every operation takes upstream: try the model's routes (router.ts), on each one call the
 * provider's adapter for the operation — or for the operation it is bridged through —, and shape what comes back
 * for the client (the operation's `present`). Each call also yields a Meter: the usage the upstream reported, or,
 * when it reports none or a stream is cut, what the tokenizer counts (in its worker thread) of what went by.
 * The gateway knows nothing of keys, accounts or money.
 */
import type { Config, ModelConfig } from '../config';
import { errors } from '../errors';
import { finishReasons, usageAttributes, type RequestTrace, type Span } from '../tracing';
import type { Usage } from '../usage';
import type { Abortable } from './cancel';
import { ModelRegistry } from './models';
import { OPERATIONS, type Operation, type OperationName } from './operations';
import type { Bridge, Reader } from './operations/types';
import { createProviders, type Provider } from './providers';
import type { Call } from './providers/provider';
import type { UpstreamOp } from './providers/types';
import { Relay, type Streamed } from './relay';
import { Router, within } from './router';
import { derived } from './splice';
import { Tokenizer, TokenizerBusy } from './tokenizer';
import type { Meter } from './types';

export interface Answer<T> {
  body: T;
  meter: Meter;
}

export type { Progress, Streamed } from './relay';

export interface CallOptions {
  /** The gateway's id of the request. */
  requestId: string;
  /** Output tokens per choice the upstream may generate (what the hold covers). */
  allowance: number;
  /** Fires when the client goes away (the call is cancelled); none: the call runs to its end whatever the client does. */
  signal?: AbortSignal;
  /** Client headers the operation passes on to a provider that serves it natively. */
  headers?: Record<string, string>;
  /** The request's trace (tracing on): each attempt is a span under it. */
  trace?: RequestTrace;
}

/** How one route serves an operation: natively, or through the operation it is bridged to. */
interface Plan {
  upstream: UpstreamOp;
  reader: Reader<any, any, any>;
  bridge: Bridge<any, any, any, UpstreamOp> | null;
}

export class Gateway {
  readonly models: ModelRegistry;
  readonly router: Router;

  constructor(
    config: Config,
    private readonly providers: Map<string, Provider> = createProviders(config.providers),
    readonly tokenizer = new Tokenizer(),
  ) {
    this.models = new ModelRegistry(config);
    this.router = new Router(providers, config.routing);
  }

  /** One answer. */
  async call<Req extends { model: string }, Res>(
    op: Operation<Req, Res>,
    model: ModelConfig,
    body: Req,
    o: CallOptions,
  ): Promise<Answer<Res>> {
    const { allowance } = o;
    const routed = await this.router.run(
      model,
      o.signal,
      async (provider, r, s, traced) => {
        const { plan, sent, call } = this.attempt(op, model, body, o, provider, r.model, s, traced);
        return { plan, sent, res: await provider.send(plan.upstream, sent as never, call) };
      },
      o.trace,
    );
    const { value, route, finish } = routed;
    const { plan, sent, res } = value;
    const reported = plan.reader.usage(res);
    if (routed.span) answered(routed.span, allowance, reported, finishReasons(res), (res as { model?: unknown }).model);
    finish();
    const used = reported ?? (await this.count(plan.reader, sent, plan.reader.answerText(res)));
    const grade = plan.reader.grade?.(res, sent);
    const meter: Meter = {
      provider: route.provider,
      usage: { ...used, ...plan.reader.units?.(res, sent) },
      counted: reported ? 'upstream' : 'tokenizer',
      ...(grade ? { grade } : {}),
    };
    const answer = (plan.bridge ? plan.bridge.answer(res, body) : res) as Res;
    const shown = op.present(
      answer,
      { model: model.id, requestId: o.requestId, usage: meter.usage, reported: !!reported },
      body,
    );
    if (!plan.bridge) derived(shown, res); // the upstream's own bytes go back, with what `present` changed spliced in
    return { body: shown, meter };
  }

  /**
   * Starts a stream on the first route that delivers a first chunk within its time-to-first-byte limit; the relay
   * (relay.ts) takes it from there.
   */
  async stream<Req extends { model: string }, Chunk>(
    op: Operation<Req, unknown, Chunk>,
    model: ModelConfig,
    body: Req,
    o: CallOptions,
  ): Promise<Streamed<Chunk>> {
    const { allowance } = o;
    const started = await this.router.run(
      model,
      o.signal,
      async (provider, r, s, traced, attempt) => {
        const { plan, sent, call } = this.attempt(op, model, body, o, provider, r.model, s, traced);
        const it = provider.stream(plan.upstream, sent as never, call)[Symbol.asyncIterator]();
        try {
          // no first chunk in time aborts the attempt (cancelling the upstream call), and the next route is tried
          const first = await within(it.next(), r.timeouts.first_byte_ms, attempt, 'first chunk');
          return { plan, sent, it, first };
        } catch (e) {
          void it.return?.(undefined).catch(() => undefined);
          throw e;
        }
      },
      o.trace,
    );
    const { plan, sent, it, first } = started.value;
    const includeUsage = op.includeUsage(body);
    const mapper = plan.bridge?.stream(body, model.id);
    const ctx = { model: model.id, requestId: o.requestId, includeUsage, body };
    const shown = (chunks: unknown[]) =>
      chunks.map((c) => op.presentChunk(c as Chunk, ctx)).filter((c): c is Chunk => c !== null);
    const relay = new Relay<Chunk>({
      op,
      model: model.id,
      requestId: o.requestId,
      includeUsage,
      routed: started,
      router: this.router,
      reader: plan.reader,
      present: (c) => shown(mapper ? mapper.push(c as never) : [c]),
      end: (p) => shown(mapper ? mapper.end(p) : []),
      count: (text) => this.count(plan.reader, sent, text),
      answered: started.span && ((usage, reasons, m) => answered(started.span!, allowance, usage, reasons, m)),
    });
    return relay.start(it, first);
  }

  /** The prompt of a request as the tokenizer counts it (a client that left before the answer pays for it). */
  async countPrompt<Req extends { model: string }>(op: Operation<Req>, model: ModelConfig, body: Req): Promise<number> {
    return this.tokenizer.count(op.reader.prompt(body));
  }

  /**
   * Anthropic's count_tokens: a route whose provider counts (Anthropic) answers; otherwise the tokenizer estimates.
   * Free: nothing is held or charged.
   */
  async countTokens<Req extends { model: string }>(
    op: Operation<Req>,
    model: ModelConfig,
    body: Req,
    signal: AbortSignal,
    headers: Record<string, string> = {},
    trace?: RequestTrace,
  ): Promise<{ input_tokens: number }> {
    const { value, finish } = await this.router.run(
      model,
      signal,
      async (provider, r, s, traced) => {
        if (!provider.serves('count_tokens', r.model)) return { input_tokens: await this.estimate(op, body) };
        const call = { model: r.model, maxOutputTokens: 0, signal: s, headers, traced };
        return provider.send('count_tokens', body as never, call);
      },
      trace,
    );
    finish();
    return value;
  }

  /** A free estimate with the tokenizer: refused (503, Anthropic's 529) while the tokenizer has a queue. */
  private async estimate<Req extends { model: string }>(op: Operation<Req>, body: Req): Promise<number> {
    try {
      return await this.tokenizer.count(op.reader.prompt(body), { optional: true });
    } catch (e) {
      throw e instanceof TokenizerBusy ? errors.unavailable() : e;
    }
  }

  /** Refuse new upstream calls (503) while the process finishes the ones in flight. */
  drain(): void {
    this.router.draining = true;
  }

  async close(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.close()));
    await this.tokenizer.close();
  }

  /**
   * What one attempt sends on a route: how the route serves the operation, the body as it goes (through the bridge,
   * if any), and the provider call (client headers only to a provider that serves the operation natively).
   */
  private attempt<Req extends { model: string }>(
    op: Operation<Req>,
    model: ModelConfig,
    body: Req,
    o: CallOptions,
    provider: Provider,
    upstreamModel: string,
    signal: Abortable,
    traced: Record<string, string> | undefined,
  ): { plan: Plan; sent: unknown; call: Call } {
    const plan = this.plan(op, model, provider, upstreamModel);
    const sent = plan.bridge ? plan.bridge.request(body, model) : body;
    const headers = plan.bridge ? {} : (o.headers ?? {});
    return { plan, sent, call: { model: upstreamModel, maxOutputTokens: o.allowance, signal, headers, traced } };
  }

  /** `upstreamModel`: the route's model id (a provider may serve an operation natively for some models only). */
  private plan(op: Operation, model: ModelConfig, provider: Provider, upstreamModel: string): Plan {
    const bridge = op.bridge && op.bridge.when(model, provider.serves(op.upstream, upstreamModel)) ? op.bridge : null;
    return bridge
      ? { upstream: bridge.via, reader: this.reader(bridge.via), bridge }
      : { upstream: op.upstream, reader: op.reader, bridge: null };
  }

  /** How to read an upstream operation's shapes (for bridged calls: the shapes that actually come back). */
  private reader(upstream: UpstreamOp): Reader<any, any, any> {
    return OPERATIONS[upstream as OperationName].reader;
  }

  private async count(reader: Reader<any, any, any>, body: unknown, generated: string): Promise<Usage> {
    const [prompt, completion] = await Promise.all([
      this.tokenizer.count(reader.prompt(body)),
      this.tokenizer.count({ kind: 'text', text: generated }),
    ]);
    return { prompt, completion, cached: 0, cacheWrite: 0, reasoning: 0 };
  }
}

/**
 * What an attempt's answer said, on its span: the output it was allowed, the tokens the upstream reported (a
 * tokenizer's count is the request's, not the upstream's), why it stopped and the model that answered.
 */
function answered(span: Span, allowance: number, reported: Usage | null, reasons: string[], model: unknown): void {
  if (allowance > 0) span.setAttribute('gen_ai.request.max_tokens', allowance);
  if (reported) span.setAttributes(usageAttributes(reported));
  if (reasons.length) span.setAttribute('gen_ai.response.finish_reasons', reasons);
  if (typeof model === 'string') span.setAttribute('gen_ai.response.model', model);
}
