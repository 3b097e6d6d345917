/**
 * The request layer of a paid /v1 call, from start to end: resolve the model once (for the key), refuse or strip
 * what the model does not allow, bound what the request may cost, count it against the key's tokens per minute,
 * admit it (a lease or a hold: billing), send it with the output allowance the money covers (gateway), and settle
 * what it used — however it ends: an answer, an upstream error, a stream that completes, breaks off, or whose
 * client goes away. It is handed the gateway, billing and the rate limits; it knows nothing of HTTP.
 */
import type { Logger } from 'pino';
import { keyAllowsModel, type ApiKey, type KeyPrincipal } from '../accounts/keys';
import type { Billing, Admission } from '../billing/billing';
import type { LimitGrant, RateLimits } from '../billing/limits';
import type { ModelConfig } from '../config';
import { ApiError, errors } from '../errors';
import { BodyError, checkAttachments, promptBound, tokenEstimate, type BodyProfile } from '../gateway/bound';
import type { Gateway, Streamed } from '../gateway/gateway';
import { toModel } from '../gateway/models';
import type { Operation } from '../gateway/operations';
import { UpstreamError, type Meter, type Model } from '../gateway/types';
import type { RequestTrace } from '../tracing';
import { usage } from '../usage';

/**
 * What the HTTP layer writes out: a JSON answer, SSE frames or bytes of a media type (audio) as they come, the
 * rate-limit headers, and the usage for the log.
 */
export type Served =
  /** JSON, or (`contentType`) text the gateway wrote (a transcript as SubRip). */
  (
    | { status?: number; body: unknown; contentType?: string }
    | { sse: AsyncIterable<string> }
    | { binary: AsyncIterable<Uint8Array>; contentType: string }
  ) & {
    headers: Record<string, string>;
    meter?: () => Meter | null;
  };

/** The client's side of an exchange (the HTTP layer makes it). */
export interface Client {
  /** Aborted when the client goes away (cancels a stream's upstream call); made when first read. */
  readonly signal: AbortSignal;
  /** Whether the client has gone away, without making a signal. */
  left(): boolean;
}

export interface PaidCall<Req = unknown> {
  principal: KeyPrincipal;
  /** The rate-limit grant taken when the key was checked (before the body was read). */
  grant: LimitGrant;
  requestId: string;
  body: Req;
  /** The body's measure (gateway/bound.ts), taken when it was parsed. */
  profile: BodyProfile;
  /** The client: its signal cancels a stream's upstream call; whether it left decides a JSON answer's status. */
  client: Client;
  /** The request's headers (those the operation passes on go upstream to a provider that serves it natively). */
  headers?: Record<string, string | string[] | undefined>;
  /** Called with the whole answer once it is complete (JSON or streamed), before the client gets the end of it. */
  onAnswer?: (answer: unknown) => Promise<void>;
  /** The request's trace, only while tracing is on. */
  trace?: RequestTrace;
}

/** A per-choice allowance above this is no limit at all; it also keeps money arithmetic far from overflow. */
const MAX_ALLOWANCE = 2 ** 31 - 1;

export class Metered {
  constructor(
    /** Replaced when the configuration is reloaded (SIGHUP); requests in flight keep the one they started with. */
    public gateway: Gateway,
    private readonly billing: Billing,
    private readonly limits: RateLimits,
    private readonly log: Logger,
  ) {}

  /**
   * Before the body is read: the key's requests per minute, and whether it has any money at all. A key that has
   * none is refused here, before the gateway parses, measures or validates a byte of what it sent.
   */
  async precheck(principal: KeyPrincipal): Promise<LimitGrant> {
    const grant = await this.limits.request(principal.key);
    try {
      await this.billing.canSpend(principal);
    } catch (e) {
      if (e instanceof ApiError) Object.assign(e.headers, grant.headers);
      throw e;
    }
    return grant;
  }

  /** A call that costs no money (its stored responses): counted against the key's requests per minute only. */
  count(principal: KeyPrincipal): Promise<LimitGrant> {
    return this.limits.request(principal.key);
  }

  /** The models a key may use, in configuration order. */
  models(key: ApiKey): Model[] {
    return this.gateway.models
      .all()
      .filter((m) => keyAllowsModel(key, m.id))
      .map(toModel);
  }

  /**
   * Anthropic's count_tokens for a model the key may use: free (no hold, no charge), after the same checks of the
   * key as a paid request, and counted against its tokens per minute like one (its prompt's estimate): counting
   * costs an upstream call or tokenizer time.
   */
  async countTokens<Req extends { model: string }>(
    op: Operation<Req>,
    call: Pick<PaidCall<Req>, 'principal' | 'grant' | 'body' | 'profile' | 'client' | 'headers' | 'trace'>,
  ): Promise<{ input_tokens: number }> {
    const { model, body, headers } = this.policy(op, call);
    await call.grant.tokens(tokenEstimate(call.profile, model));
    if (call.trace) traced(call.trace, op, call, model, 0).admitted(who(call.principal)); // nothing held
    try {
      return await this.gateway.countTokens(op, model, body, call.client.signal, headers, call.trace);
    } catch (e) {
      throw withHeaders(e, call.grant);
    }
  }

  /** One model for GET /v1/models/{model}: unknown or not allowed → 404. */
  model(id: string, key: ApiKey): Model {
    const m = this.gateway.models.get(id);
    if (!m || !keyAllowsModel(key, id)) throw errors.modelNotFound(id, 404);
    return toModel(m);
  }

  async serve<Req extends { model: string }>(op: Operation<Req>, call: PaidCall<Req>): Promise<Served> {
    let a: Admitted<Req>;
    try {
      a = await this.admit(op, call);
    } catch (e) {
      call.trace?.admitted(who(call.principal), e);
      throw e;
    }
    const started = Date.now();
    try {
      if (op.streams(a.body)) return await this.stream(op, call, a, started);
      // A client that leaves does not stop an answer that is not streamed: the upstream generates it and bills it
      // anyway (it notices a closed connection only when it writes), so the call runs to its end and its usage is
      // charged — exactly what the upstream billed, never a guess.
      const upstream = { requestId: call.requestId, allowance: a.allowance, headers: a.headers, trace: call.trace }; // no signal
      const answer = await this.gateway.call(op, a.model, a.body, upstream);
      const used = withUnits(op, a.body, answer.meter);
      await a.admission.settle({ status: call.client.left() ? 499 : 200, used, ttfbMs: Date.now() - started });
      a.ended(used);
      await call.onAnswer?.(answer.body);
      const contentType = op.answerType?.(a.body);
      return { body: answer.body, headers: call.grant.headers, meter: () => used, ...(contentType && { contentType }) };
    } catch (e) {
      const status = e instanceof ApiError ? e.status : 500;
      // A client that leaves before a stream's first chunk pays for its prompt, which the upstream has been sent (the
      // stream is cancelled); an upstream that failed to answer costs nothing.
      const used = status === 499 ? withUnits(op, a.body, await this.promptOnly(op, a.model, a.body)) : null;
      await a.admission.settle({ status, used });
      a.ended(used);
      throw withHeaders(e, call.grant);
    }
  }

  /**
   * A streamed answer, server-sent events or bytes (`op.binary`): started once its first chunk is in, written as the
   * rest comes, and settled when it ends, however it ends — for what the upstream reported, or (`op.unreported`)
   * what a stream cut before its usage costs.
   */
  private async stream<Req extends { model: string }>(
    op: Operation<Req>,
    call: PaidCall<Req>,
    a: Admitted<Req>,
    started: number,
  ): Promise<Served> {
    const upstream = { requestId: call.requestId, allowance: a.allowance, headers: a.headers, trace: call.trace };
    const streamed = await this.gateway.stream(op, a.model, a.body, { ...upstream, signal: call.client.signal });
    a.admission.track(streamed.progress);
    const charged = (m: Meter) => {
      const counted =
        m.counted === 'upstream' || !op.unreported ? m : { ...m, usage: op.unreported(m.usage, a.body, a.allowance) };
      return withUnits(op, a.body, counted)!;
    };
    let meter: Meter | null = null;
    void streamed.meter.then((m) => (meter = charged(m)));
    const contentType = op.binary?.(a.body) ?? null;
    const frames = this.frames(op, streamed, {
      model: a.model.id,
      requestId: call.requestId,
      admission: a.admission,
      ttfbMs: Date.now() - started,
      binary: contentType !== null,
      charged,
      ended: a.ended,
      onAnswer: call.onAnswer,
    });
    const served = contentType
      ? { binary: frames as AsyncIterable<Uint8Array>, contentType }
      : { sse: frames as AsyncIterable<string> };
    return { ...served, headers: call.grant.headers, meter: () => meter };
  }

  /**
   * The model, the body as it may go upstream (features: refused or stripped), and its admission: the tokens per
   * minute and the hold of its prompt bound and output allowance — what an upstream generates beyond the limit it
   * is sent (`extra_output_tokens`) included, though never sent as part of that limit.
   */
  private async admit<Req extends { model: string }>(op: Operation<Req>, call: PaidCall<Req>): Promise<Admitted<Req>> {
    const { principal, grant } = call;
    const { model, body, headers } = this.policy(op, call);
    await op.measure?.(body);
    const { perChoice, choices, fixed, others, grades, lowerable } = op.output(body, model);
    const extra = perChoice > 0 ? model.extra_output_tokens : 0;
    const asked = (Math.min(perChoice, MAX_ALLOWANCE) + extra) * choices;
    const reserved = tokenEstimate(call.profile, model) + asked;
    if (call.trace) traced(call.trace, op, call, model, perChoice);
    await grant.tokens(reserved);
    try {
      const admission = await this.billing.admit({
        trace: call.trace,
        requestId: call.requestId,
        principal,
        model,
        endpoint: op.name,
        promptTokens: op.promptBound ? op.promptBound(body, call.profile, model) : promptBound(call.profile, model),
        outputTokens: asked,
        choices,
        extraPerChoice: extra,
        fixedOutput: fixed,
        units: op.units?.(body),
        promptBytes: call.profile.textBytes,
        others,
        grades,
        lowerable,
      });
      const allowance = choices ? Math.floor(admission.outputTokens / choices) - extra : 0;
      call.trace?.admitted({ ...who(principal), 'switchyard.hold_micro_usd': admission.held });
      const ended = (m: Meter | null) => grant.refund(reserved - (m ? m.usage.prompt + m.usage.completion : 0));
      return { model, body, headers, admission, allowance, ended };
    } catch (e) {
      grant.refund(reserved);
      throw withHeaders(e, grant);
    }
  }

  /**
   * The one gate between a client's request and an upstream, for every operation that sends one (paid or counted):
   * the key may use the model; attachments it does not take are refused; the operation's price-raising fields are
   * refused or stripped (policy.ts) and so are the headers it passes on. Nothing is spent before it passes.
   */
  private policy<Req extends { model: string }>(
    op: Operation<Req>,
    call: Pick<PaidCall<Req>, 'principal' | 'grant' | 'body' | 'profile' | 'headers'>,
  ) {
    if (!keyAllowsModel(call.principal.key, call.body.model))
      throw withHeaders(errors.modelNotFound(call.body.model), call.grant);
    const model = this.gateway.models.resolve(call.body.model, op);
    try {
      checkAttachments(call.profile, model);
      const body = op.features(call.body, model, call.profile);
      const passed = forwarded(call.headers, op.forwardHeaders);
      return { model, body, headers: op.headers ? op.headers(passed, model) : passed };
    } catch (e) {
      throw withHeaders(e instanceof BodyError ? errors.invalidRequest(e.message, e.param) : e, call.grant);
    }
  }

  /**
   * The stream as frames (SSE, or the bytes of a binary answer); when it ends, however it ends, what it used is
   * settled. A binary answer that fails after it started has no way to say so in its bytes: it breaks off (throws)
   * instead, so that the client sees a broken answer rather than audio that merely stops.
   */
  private async *frames<Req extends { model: string }>(
    op: Operation<Req>,
    streamed: Streamed<unknown>,
    o: StreamEnd,
  ): AsyncGenerator<string | Uint8Array> {
    const { admission, ttfbMs, ended } = o;
    let status = 499; // unless the stream completes or fails, its client went away
    let last: unknown;
    let broken: { e: unknown } | null = null;
    try {
      for await (const chunk of streamed.chunks) {
        const whole = o.onAnswer && op.finalAnswer?.(chunk);
        if (whole) await o.onAnswer!(whole);
        yield op.framing.frame((last = chunk));
      }
      status = 200;
      if (op.framing.done) yield op.framing.done;
    } catch (e) {
      status = e instanceof UpstreamError && e.reason === 'aborted' ? 499 : 502;
      if (o.binary) broken = { e };
      else yield op.framing.error(e, { last, model: o.model, requestId: o.requestId });
    } finally {
      const m = o.charged(await streamed.meter);
      await admission.settle({ status, used: m, ttfbMs });
      ended(m);
    }
    if (broken) throw broken.e;
  }

  private async promptOnly<Req extends { model: string }>(
    op: Operation<Req>,
    model: ModelConfig,
    body: Req,
  ): Promise<Meter | null> {
    try {
      return { provider: '', usage: usage(await this.gateway.countPrompt(op, model, body), 0), counted: 'tokenizer' };
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'could not count the prompt of a request whose client left');
      return null;
    }
  }
}

/** A request admitted: the model, the body as it goes upstream, its admission and allowance. */
interface Admitted<Req> {
  model: ModelConfig;
  body: Req;
  headers: Record<string, string>;
  admission: Admission;
  /** Output tokens per choice the upstream may generate. */
  allowance: number;
  /** Gives back the tokens per minute the request reserved and did not use. */
  ended: (m: Meter | null) => void;
}

interface StreamEnd {
  model: string;
  requestId: string;
  admission: Admission;
  ttfbMs: number;
  /** The answer is bytes: a failure breaks it off rather than being framed. */
  binary: boolean;
  /** What the stream is charged for what it used (see Metered.stream). */
  charged: (m: Meter) => Meter;
  ended: (m: Meter) => void;
  onAnswer?: (answer: unknown) => Promise<void>;
}

/**
 * A request's usage with the units the operation counts from the request itself (a speech input's characters, a
 * moderation request, a rerank's search units), billed whenever an upstream was called: a request that reached none
 * (no meter) uses none.
 */
function withUnits<Req extends { model: string }>(op: Operation<Req>, body: Req, m: Meter | null): Meter | null {
  const units = m && op.units?.(body);
  return units ? { ...m, usage: { ...m.usage, ...units } } : m;
}

/** The request headers an operation passes on, by their (lower-case) names. */
function forwarded(
  headers: PaidCall<unknown>['headers'],
  names: readonly string[] | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names ?? []) {
    const v = headers?.[n];
    if (typeof v === 'string' && v) out[n] = v;
  }
  return out;
}

/**
 * A paid request's trace learns what it is: the GenAI operation, the model asked for (the answer names it too) and
 * the output it asked for; its attempts are named after them.
 */
function traced(
  t: RequestTrace,
  op: Operation<any>,
  call: Pick<PaidCall<{ model: string }>, 'body'>,
  model: ModelConfig,
  maxTokens: number,
): RequestTrace {
  t.operation = op.genAi ?? op.name;
  t.model = model.id;
  t.span.setAttributes({
    'gen_ai.operation.name': t.operation,
    'gen_ai.request.model': call.body.model,
    'gen_ai.response.model': model.id,
    ...(maxTokens > 0 && maxTokens < MAX_ALLOWANCE && { 'gen_ai.request.max_tokens': maxTokens }),
  });
  return t;
}

/** Who pays, by id only (never the key). */
const who = (p: KeyPrincipal) => ({ 'switchyard.account.id': p.accountId, 'switchyard.key.id': p.key.id });

/** The error with the rate-limit headers of the request's grant, so that a refusal shows them too. */
export function withHeaders(e: unknown, grant: LimitGrant): unknown {
  if (e instanceof ApiError) Object.assign(e.headers, grant.headers);
  return e;
}
