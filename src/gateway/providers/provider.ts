/**
 * Runs a provider descriptor for one configured provider: builds each upstream request (URL, headers — signed per
 * request if the descriptor says so —, the body serialised once), sends it over the provider's pooled HTTP client
 * (or to a local adapter), and hands the answer or the stream to the descriptor's adapter.
 */
import type { ProviderConfig } from '../../config';
import { abortSignal, type Abortable } from '../cancel';
import { UpstreamError } from '../types';
import { derived, serialized } from '../splice';
import { FormBody } from './form';
import { UpstreamHttp } from './http';
import type { Adapter, CallContext, HttpAdapter, OutgoingRequest, ProviderDescriptor, UpstreamOp, Wire } from './types';

export interface Call {
  /** The model id the upstream knows. */
  model: string;
  maxOutputTokens: number;
  signal: Abortable;
  /** Client headers the operation passes on to a provider that serves it natively. */
  headers?: Record<string, string>;
  /** The attempt's W3C trace-context headers (tracing on): sent upstream whether or not the call is bridged. */
  traced?: Record<string, string>;
}

export class Provider {
  private readonly http: UpstreamHttp | null;
  private readonly fixedHeaders: Record<string, string>;
  private readonly state: unknown;

  constructor(
    readonly descriptor: ProviderDescriptor<any>,
    readonly config: ProviderConfig,
  ) {
    const local = Object.values(descriptor.operations).every((a) => a && 'local' in a);
    this.http = local ? null : new UpstreamHttp(config, descriptor.errors);
    // Header names are case-insensitive: configured ones replace the descriptor's (e.g. another anthropic-version).
    this.fixedHeaders = lower({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...descriptor.headers?.(config),
      ...config.headers,
    });
    this.state = descriptor.state?.(config);
  }

  get name(): string {
    return this.config.name;
  }

  /** Reached over HTTP (not answered in the process, as the mock provider is). */
  get remote(): boolean {
    return this.http !== null;
  }

  /** Whether it serves an upstream operation natively (for the route's `model`, when given). */
  serves(op: UpstreamOp, model?: string): boolean {
    if (!this.descriptor.operations[op]) return false;
    return model === undefined || this.descriptor.natively?.(op, model) !== false;
  }

  async send<Op extends UpstreamOp>(op: Op, body: Wire[Op]['req'], call: Call): Promise<Wire[Op]['res']> {
    const adapter = this.adapter(op);
    const ctx = this.context(call, false);
    if ('local' in adapter) {
      if (!adapter.local.send) throw unsupported(this.descriptor.type, op, 'unstreamed requests');
      return adapter.local.send(body, ctx, abortSignal(call.signal));
    }
    if (!adapter.response) throw unsupported(this.descriptor.type, op, 'unstreamed requests');
    const req = await this.request(adapter, body, ctx, undefined, call.traced);
    const json = await this.http!.json(req, call.signal, !!adapter.asWritten).catch((e: unknown) => this.failed(e));
    return adapter.response(json, ctx, body);
  }

  async *stream<Op extends UpstreamOp>(op: Op, body: Wire[Op]['req'], call: Call): AsyncGenerator<Wire[Op]['chunk']> {
    const adapter = this.adapter(op);
    const ctx = this.context(call, true);
    if ('local' in adapter) {
      if (!adapter.local.stream) throw unsupported(this.descriptor.type, op, 'streams');
      yield* adapter.local.stream(body, ctx, abortSignal(call.signal));
      return;
    }
    if (adapter.bytes?.(body, ctx)) {
      // Chunks of the operation's answer as they come: the wire's chunk type says that bytes are among them.
      const req = await this.request(adapter, body, ctx, '*/*', call.traced);
      yield* this.http!.bytes(req, call.signal) as AsyncIterable<never>;
      return;
    }
    if (!adapter.stream) throw unsupported(this.descriptor.type, op, 'streams');
    const req = await this.request(adapter, body, ctx, undefined, call.traced);
    try {
      yield* this.http!.stream(req, call.signal, (events) => adapter.stream!(events, ctx), adapter.framing);
    } catch (e) {
      this.failed(e);
    }
  }

  /** A failed call: an upstream that refused our credentials (401) is told to its descriptor, which may drop them. */
  private failed(e: unknown): never {
    if (e instanceof UpstreamError && e.reason === 'status' && e.status === 401)
      this.descriptor.unauthorized?.(this.state);
    throw e;
  }

  async close(): Promise<void> {
    await this.http?.close();
  }

  private adapter<Op extends UpstreamOp>(op: Op): Adapter<Wire[Op]['req'], Wire[Op]['res'], Wire[Op]['chunk']> {
    const adapter = this.descriptor.operations[op];
    if (!adapter) throw unsupported(this.descriptor.type, op);
    return adapter as Adapter<Wire[Op]['req'], Wire[Op]['res'], Wire[Op]['chunk']>;
  }

  private context(call: Call, stream: boolean): CallContext {
    return {
      config: this.config,
      model: call.model,
      stream,
      maxOutputTokens: call.maxOutputTokens,
      headers: call.headers ?? {},
      state: this.state,
    };
  }

  /**
   * The request for the upstream; `accept`: the media types of a binary answer, in place of JSON and events;
   * `traced`: the attempt's trace-context headers (before signing, so a signature covers them like any other).
   */
  private async request<Req>(
    adapter: HttpAdapter<Req, unknown, unknown>,
    body: Req,
    ctx: CallContext,
    accept?: string,
    traced?: Record<string, string>,
  ): Promise<OutgoingRequest> {
    const upstream = adapter.request(body, ctx);
    if (upstream instanceof FormBody) return this.formRequest(adapter, body, ctx, upstream, traced);
    let text: string | Buffer;
    try {
      if (adapter.asWritten) derived(upstream, body); // written from the client's bytes, when it has them
      text = serialized(upstream, 'request');
    } catch {
      // Only a request we cannot write as JSON gets here (the server refuses deep nesting and non-finite numbers first).
      throw new UpstreamError(
        'invalid',
        'the request cannot be serialised',
        400,
        'The request body cannot be serialised as JSON',
      );
    }
    const req: OutgoingRequest = {
      method: 'POST',
      url: `${this.config.base_url}${adapter.path(ctx, body)}`,
      headers: { ...this.fixedHeaders, ...merge(this.fixedHeaders, ctx.headers), ...(accept && { accept }) },
      body: text,
    };
    if (traced) Object.assign(req.headers, traced);
    if (this.descriptor.sign)
      Object.assign(req.headers, lower(await this.descriptor.sign(req, this.config, this.state)));
    return req;
  }

  /** A multipart request (files): its bytes are streamed, so a provider that signs each body cannot take it. */
  private formRequest<Req>(
    adapter: HttpAdapter<Req, unknown, unknown>,
    body: Req,
    ctx: CallContext,
    form: FormBody,
    traced: Record<string, string> | undefined,
  ) {
    if (this.descriptor.sign) throw unsupported(this.descriptor.type, 'multipart');
    const type = { 'content-type': form.contentType, 'content-length': String(form.length) };
    const req: OutgoingRequest = {
      method: 'POST',
      url: `${this.config.base_url}${adapter.path(ctx, body)}`,
      headers: { ...this.fixedHeaders, ...merge(this.fixedHeaders, ctx.headers), ...type, ...traced },
      body: form.stream(),
    };
    return req;
  }
}

/** A client's headers over the provider's: a list header (anthropic-beta) joins both lists; the provider's others win. */
function merge(fixed: Record<string, string>, client: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(client)) {
    if (!(k in fixed)) out[k] = v;
    else if (k === 'anthropic-beta')
      out[k] = [
        ...new Set(
          `${fixed[k]},${v}`
            .split(',')
            .map((x) => x.trim())
            .filter(Boolean),
        ),
      ].join(',');
  }
  return out;
}

function lower(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
  return out;
}

function unsupported(type: string, op: string, what = 'requests'): UpstreamError {
  return new UpstreamError(
    'invalid',
    `the ${type} provider does not serve ${op} ${what}`,
    400,
    `This model does not support ${op} ${what}`,
  );
}
