/**
 * A provider is a folder with one descriptor: data about an upstream wire format plus small pure adapters, in the
 * spirit of Portkey's `src/providers/<name>/` and One API's narrow adaptor. It knows nothing of keys, billing or
 * our HTTP status codes: it turns an operation's request into the upstream's, the upstream's answer (or stream)
 * back into the operation's shapes, and reports failures as UpstreamErrors. `provider.ts` runs descriptors.
 */
import type { CacheMultipliers, ProviderConfig } from '../../config';
import type { UpstreamOp, Wire } from '../../contract';
import type { Readable } from 'node:stream';
import type { SseEvent } from '../sse';

/**
 * The upstream operations a provider may serve (wires), with their request, answer and chunk shapes (OpenAI's
 * and Anthropic's wire types): the contract's (x-switchyard.wire of an operation), in src/contract.ts.
 */
export type { UpstreamOp, Wire };

/** What an adapter knows about the call it shapes. */
export interface CallContext<State = unknown> {
  config: ProviderConfig;
  /** The model id the upstream knows (the route's `model`). */
  model: string;
  stream: boolean;
  /** The output allowance per choice; the request body carries it too, as the operation's own limit field. */
  maxOutputTokens: number;
  /** Client headers the operation passes on (e.g. anthropic-beta), when the provider serves it natively. */
  headers: Record<string, string>;
  /** The provider's own state (see ProviderDescriptor.state), shared by its calls. */
  state: State;
}

/** An adapter for an upstream reached over HTTP: where to POST, what to send, how to read what comes back. */
export interface HttpAdapter<Req, Res, Chunk, State = unknown> {
  /** Path (and query) under the provider's base_url. */
  path(ctx: CallContext<State>, body: Req): string;
  /** The upstream's request body. */
  request(body: Req, ctx: CallContext<State>): unknown;
  /**
   * The upstream's wire is the operation's: `request` only replaces, adds or removes top-level fields of the body
   * (a copy of its fields: shared.ts fieldsOf) and `response` returns the upstream's answer object itself, changing nothing in it. The request
   * then goes as the client's own bytes with those fields spliced in, and the answer comes back as the upstream's
   * bytes (splice.ts): nothing is serialised again.
   */
  asWritten?: boolean;
  /**
   * The upstream's JSON answer → the operation's answer (`body`: the request it answers); absent for an operation
   * whose answer always streams (speech).
   */
  response?(json: unknown, ctx: CallContext<State>, body: Req): Res;
  /** The upstream's stream, already split into SSE events → the operation's chunks (it ends the stream when done). */
  stream?(events: AsyncIterable<SseEvent>, ctx: CallContext<State>): AsyncIterable<Chunk>;
  /**
   * The answer to this request is bytes (audio), not events: the stream's chunks are then the body's bytes as they
   * arrive, passed on as they are.
   */
  bytes?(body: Req, ctx: CallContext<State>): boolean;
  /** How the streamed body is framed; server-sent events unless the upstream uses something else. */
  framing?: (body: AsyncIterable<Buffer>) => AsyncIterable<SseEvent>;
}

/** An adapter that answers in the process (the mock provider). */
export interface LocalAdapter<Req, Res, Chunk, State = unknown> {
  local: {
    /** Absent for an operation whose answer always streams (speech). */
    send?(body: Req, ctx: CallContext<State>, signal: AbortSignal): Promise<Res>;
    stream?(body: Req, ctx: CallContext<State>, signal: AbortSignal): AsyncIterable<Chunk>;
  };
}

export type Adapter<Req, Res, Chunk, State = unknown> =
  HttpAdapter<Req, Res, Chunk, State> | LocalAdapter<Req, Res, Chunk, State>;

export type Adapters<State> = {
  [Op in UpstreamOp]?: Adapter<Wire[Op]['req'], Wire[Op]['res'], Wire[Op]['chunk'], State>;
};

/** The request about to be sent, for providers that sign each one. */
export interface OutgoingRequest {
  method: 'POST';
  url: string;
  headers: Record<string, string>;
  /** JSON (text, or bytes spliced from the client's: splice.ts), or the bytes of a multipart body (files) as they are read. */
  body: string | Buffer | Readable;
}

/** What a provider reads in the JSON body of an error answer. */
export interface UpstreamErrorInfo {
  /** The upstream's own message for the caller. */
  message?: string;
  /** The status to report instead of the one the upstream answered. */
  status?: number;
  /** Added to our description of the failure (e.g. Gemini's `INVALID_ARGUMENT`). */
  code?: string;
}

/**
 * `headers`: the error answer's headers, lower-cased (AWS names the error's type in `x-amzn-errortype`, not in the
 * body).
 */
export type ErrorReader = (body: unknown, status: number, headers: Record<string, string>) => UpstreamErrorInfo;

export interface ProviderDescriptor<State = unknown> {
  /** The configuration's `type`. */
  type: string;
  /** Its `gen_ai.provider.name` in traces (the OpenTelemetry GenAI conventions' value); left out, `switchyard.<type>`. */
  genAi?: string;
  /**
   * Where the upstream is unless the configuration says, fixed or made from its settings (a region); without one,
   * `base_url` is required.
   */
  baseUrl?: string | ((settings: Record<string, unknown>) => string);
  /** JSON Schemas of the settings of its own the configuration may give (read from ProviderConfig.settings). */
  settings?: Record<string, object>;
  /** Those of its settings a provider of this type must give (a cloud's project and location). */
  required?: string[];
  /**
   * Those of its settings that are credentials: with the catalog in the database they are encrypted at rest and
   * write-only (no answer, log or export shows more than their last 4 characters).
   */
  secrets?: string[];
  /** Headers of every request: credentials and fixed ones (the configured `headers` are added after, and win). */
  headers?(config: ProviderConfig): Record<string, string>;
  /**
   * Headers computed from each request just before it is sent (e.g. a signature over the body, or a short-lived
   * token kept in the provider's state). A failure is an UpstreamError, like any other failure to reach it.
   */
  sign?(
    request: OutgoingRequest,
    config: ProviderConfig,
    state: State,
  ): Record<string, string> | Promise<Record<string, string>>;
  /**
   * The upstream refused the credentials of a call (HTTP 401): a provider that keeps short-lived ones in its state
   * (a token) drops them, so that the next call gets new ones rather than failing until they expire.
   */
  unauthorized?(state: State): void;
  /** How to read an error answer (default: OpenAI's `{"error":{"message"}}`). */
  errors?: ErrorReader;
  /** State a configured provider keeps across calls (e.g. Gemini's thought signatures). */
  state?(config: ProviderConfig): State;
  /**
   * What it bills for the cache classes it bills apart from input, in thousandths of the input price: a model that
   * leaves a class's price out is priced from it (config/load.ts). A class left out here is priced at input.
   */
  cache?: CacheMultipliers;
  operations: Adapters<State>;
  /**
   * Whether an operation it has an adapter for is served natively for this route's model (default: yes); when not,
   * the gateway takes the operation's bridge (to chat), as for a provider without the adapter. A cloud that hosts
   * several publishers serves Anthropic's Messages natively for Claude only, not for Llama or Gemini.
   */
  natively?(op: UpstreamOp, model: string): boolean;
}

/** Declares a descriptor (typing its adapters against its state). */
export const defineProvider = <State = undefined>(d: ProviderDescriptor<State>): ProviderDescriptor<State> => d;
