/** Wire types of the gateway, all taken from the contract, and the interface every provider implements. */
import type { components } from '../../generated/openapi';

type S = components['schemas'];
export type ChatRequest = S['CreateChatCompletionRequest'];
export type ChatResponse = S['CreateChatCompletionResponse'];
export type ChatChunk = S['CreateChatCompletionStreamResponse'];
export type CompletionRequest = S['CreateCompletionRequest'];
export type CompletionResponse = S['CreateCompletionResponse'];
export type EmbeddingRequest = S['CreateEmbeddingRequest'];
export type EmbeddingResponse = S['CreateEmbeddingResponse'];
export type Usage = S['CompletionUsage'];
export type Model = S['Model'];
export type ChatMessage = S['ChatCompletionRequestMessage'];

/** One call to an upstream: the client's body (unknown fields kept), the upstream's model id, and a cancel signal. */
export interface UpstreamCall<B> {
  body: B;
  /** The model id the upstream knows (the route's `model`). */
  model: string;
  /** The model's output allowance, for upstreams that require one (Anthropic's max_tokens). */
  maxOutputTokens: number;
  signal: AbortSignal;
}

/**
 * A provider speaks one upstream wire format. It knows nothing of keys, billing or HTTP status codes of our own:
 * it returns OpenAI-shaped objects or throws an UpstreamError.
 */
export interface Provider {
  chat(call: UpstreamCall<ChatRequest>): Promise<ChatResponse>;
  /** Chunks as they arrive; the last one may carry usage with `choices: []`. */
  chatStream(call: UpstreamCall<ChatRequest>): AsyncIterable<ChatChunk>;
  completion(call: UpstreamCall<CompletionRequest>): Promise<CompletionResponse>;
  completionStream(call: UpstreamCall<CompletionRequest>): AsyncIterable<CompletionResponse>;
  embeddings(call: UpstreamCall<EmbeddingRequest>): Promise<EmbeddingResponse>;
  close(): Promise<void>;
}

export type UpstreamFailure =
  | 'connect' // refused, reset, DNS: nothing reached the upstream
  | 'timeout' // connect, first byte, idle or total limit
  | 'status' // the upstream answered with an HTTP error status
  | 'protocol' // an answer we cannot read, or an error event inside a stream
  | 'aborted'; // our own caller went away

export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    readonly reason: UpstreamFailure,
    message: string,
    /** HTTP status of the upstream's answer, for reason 'status'. */
    readonly status?: number,
    /** The upstream's own error message, safe to show to a caller whose request was at fault. */
    readonly upstreamMessage?: string,
  ) {
    super(message);
  }
}
