/**
 * An operation is one client-facing endpoint, as a descriptor: the wire that serves it (and so, per the contract,
 * which models it serves) and the one it may go through instead, what it may cost (its output
 * allowance; the prompt is bounded by the body's profile, see bound.ts), what it forbids or strips per model, how
 * to read usage and text from an answer and a chunk, how to shape what the client gets, and how a stream is framed.
 * The gateway runs every operation on one generic path (gateway.ts); the request layer meters it (metered.ts).
 */
import type { ModelConfig } from '../../config';
import type { OperationName, UpstreamOp, Wire } from '../../contract';
import type { Units, Usage } from '../../usage';
import type { BodyProfile } from '../bound';
import type { CountJob } from '../tokenizer';

/** The wires of the contract's paid operations: each has its descriptor here, in <name>.ts. */
export type { OperationName };

/** What a request asks to generate: an allowance per choice and the number of choices (best_of, n, prompts). */
export interface Output {
  /** Tokens per choice: the request's own limit, or the model's default; 0 for operations that generate nothing. */
  perChoice: number;
  choices: number;
  /** Bounds of the families other than prompt and output, by usage class (generated images: `{ images: n }`). */
  others?: Readonly<Record<string, number>>;
  /** The grades (`<size>/<quality>`) the request allows, for the classes priced by grade (images). */
  grades?: readonly string[];
  /**
   * False: the upstream takes no output limit (an image is as many tokens as its size and quality make), so when the
   * money is short the request is refused instead of being sent with a lower allowance.
   */
  lowerable?: boolean;
  /**
   * The upstream takes no limit (speech): the allowance is a bound of what it may generate, not a limit it is sent,
   * so it is held whole — a balance that covers less refuses the request rather than lowering it.
   */
  fixed?: boolean;
}

/** How the operation's answer reaches the client as a stream. */
export interface Framing {
  /** An event as server-sent events frame it, or the bytes of a binary answer as they are. */
  frame(chunk: unknown): string | Uint8Array;
  /** Written after the last frame (OpenAI's `data: [DONE]`). */
  done: string;
  /** The frame(s) that end a stream which failed after it started. */
  error(e: unknown, c: Failed): string;
}

/** Where a stream stood when it failed. */
export interface Failed {
  /** The last chunk the client got (Responses numbers its events on from it). */
  last: unknown;
  /** The model id the client asked for, and the gateway's id of the request. */
  model: string;
  requestId: string;
}

/** What presenting an answer needs: the model id the client asked for, and the usage billed. */
export interface Presented {
  model: string;
  /** The gateway's id of the request (for ids the gateway gives an answer, as a stored response's). */
  requestId: string;
  usage: Usage;
  /** The upstream reported the usage (the answer's own usage object is shown); else ours is. */
  reported: boolean;
  /** For streams: the upstream's usage object as it came (in the upstream operation's shape), when reported. */
  raw?: unknown;
}

export interface ChunkContext {
  model: string;
  requestId: string;
  includeUsage: boolean;
  /** The request as the client sent it (for answers that echo it). */
  body: unknown;
}

export interface StreamUsage {
  usage: Usage;
  final: boolean;
}

/** Reading an upstream operation's shapes: its usage, and the text to count when it reports none. */
export interface Reader<Req, Res, Chunk> {
  usage(res: Res): Usage | null;
  /**
   * The usage a stream has reported once this chunk is read (`previous`: what it had reported before), or null;
   * `final` when it is the whole request's (Anthropic reports the prompt first and the output at the end).
   */
  chunkUsage(chunk: Chunk, previous: StreamUsage | null): StreamUsage | null;
  /** The prompt to count with the tokenizer. */
  prompt(body: Req): CountJob;
  /** Everything generated, to count: every string of every choice (content, reasoning, refusal, tool calls, audio). */
  answerText(res: Res): string;
  chunkText(chunk: Chunk): string;
  /** The chunk ends generation (a finish reason): it is held back until the usage that may follow it arrives. */
  final?(chunk: Chunk): boolean;
  /**
   * Counts the answer itself shows, whether or not the upstream reported usage (the images it carries): added to
   * the usage, reported or counted.
   */
  units?(res: Res, body: Req): Partial<Usage>;
  /**
   * The grade (`<size>/<quality>`) of what the answer made, for the classes priced by grade: the answer's own word,
   * else the request's; null when neither says (the request left it to the upstream).
   */
  grade?(res: Res, body: Req): string | null;
}

/** Turns the chunks of the operation a stream went through into this operation's (possibly several per chunk). */
export interface StreamMapper<From, To> {
  push(chunk: From): To[];
  /** What to send after the last chunk, once the usage is known. */
  end(p: Presented): To[];
}

/** Serving an operation through another upstream operation (legacy completions on a chat model go through chat). */
export interface Bridge<Req, Res, Chunk, Via extends UpstreamOp> {
  via: Via;
  /** Whether to take the bridge for this model (on this provider, which may lack the operation). */
  when(model: ModelConfig, nativelyServed: boolean): boolean;
  request(body: Req, model: ModelConfig): Wire[Via]['req'];
  answer(res: Wire[Via]['res'], body: Req): Res;
  /** A mapper for one stream (`model`: the id the client asked for). */
  stream(body: Req, model: string): StreamMapper<Wire[Via]['chunk'], Chunk>;
}

export interface Operation<Req extends { model: string } = any, Res = any, Chunk = any> {
  name: OperationName;
  /**
   * Its `gen_ai.operation.name` in traces, where the OpenTelemetry GenAI conventions name it (`chat`,
   * `text_completion`, `embeddings`); left out, its own name.
   */
  genAi?: string;
  path: string;
  /**
   * The upstream operation that serves it natively, and how to read that operation's shapes. The kinds of model it
   * serves are that wire's (the contract's x-switchyard.kinds), and its bridge's wire's.
   */
  upstream: UpstreamOp;
  /** Client headers passed on when a provider serves the operation natively (e.g. anthropic-beta). */
  forwardHeaders?: readonly string[];
  /**
   * Those headers as they go upstream for this model: what would raise the upstream's price (Anthropic's priced
   * betas) is taken out, unless the model allows it.
   */
  headers?(headers: Record<string, string>, model: ModelConfig): Record<string, string>;
  reader: Reader<any, any, any>;
  bridge?: Bridge<Req, Res, Chunk, UpstreamOp>;
  streams(body: Req): boolean;
  /** The client asked for usage at the end of a stream. */
  includeUsage(body: Req): boolean;
  /** The output allowance the request asks for. */
  output(body: Req, model: ModelConfig): Output;
  /**
   * The prompt tokens the request cannot exceed, when the body's bound (bound.ts, `promptBound`) is not it: a
   * reranker reads the query once with every document.
   */
  promptBound?(body: Req, profile: BodyProfile, model: ModelConfig): number;
  /**
   * Reads what pricing the request needs from its files (an audio file's length), once the caller and the model passed
   * and before anything is bounded or held; `output`, `promptBound` and the reader read what it found.
   */
  measure?(body: Req): Promise<void>;
  /**
   * Price-raising features, per the model's `allow` list: refused (throws a 400 ApiError) or stripped (returns the
   * body without them). Attachments were checked from the profile already.
   */
  features(body: Req, model: ModelConfig, profile: BodyProfile): Req;
  /**
   * What the request uses of the classes not counted in tokens whatever its answer, by usage field, counted from the
   * request itself before it is sent (a speech input's characters; a moderation: one request; a rerank: its search
   * units): the hold covers them exactly, and they are charged with what the answer used once the upstream was
   * called (nothing when no upstream was).
   */
  units?(body: Req): Units;
  /**
   * What to charge when the upstream reported no usage (a stream cut before it), given what was counted and the
   * output allowance per choice; by default what was counted.
   */
  unreported?(counted: Usage, body: Req, allowance: number): Usage;
  /**
   * The media type of the answer when it is bytes (audio) rather than JSON or server-sent events, for this request;
   * null (or absent) otherwise. A binary answer always streams.
   */
  binary?(body: Req): string | null;
  /**
   * The media type of the answer when it is text written by the gateway (a transcript as `text`, `srt` or `vtt`)
   * rather than JSON: `present` then returns that text. Null (or absent) for JSON.
   */
  answerType?(body: Req): string | null;
  present(res: Res, p: Presented, body: Req): Res;
  /** A chunk as the client gets it, or null to hold it back; `includeUsage`: the client asked for the usage chunk. */
  presentChunk(chunk: Chunk, c: ChunkContext): Chunk | null;
  /** The whole answer a chunk carries when it ends a stream (Responses' response.completed), for those who keep it. */
  finalAnswer?(chunk: Chunk): Res | null;
  /** Chunks sent after the last one (the usage chunk). */
  tail(last: Chunk | undefined, p: Presented, includeUsage: boolean): Chunk[];
  framing: Framing;
}
