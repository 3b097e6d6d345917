/** Wire types of the gateway, all taken from the contract, what a request used, and how upstream calls fail. */
import type { components } from '../../generated/openapi';
import type { Usage } from '../usage';

type S = components['schemas'];
export type ChatRequest = S['CreateChatCompletionRequest'];
export type ChatResponse = S['CreateChatCompletionResponse'];
export type ChatChunk = S['CreateChatCompletionStreamResponse'];
export type CompletionRequest = S['CreateCompletionRequest'];
export type CompletionResponse = S['CreateCompletionResponse'];
export type EmbeddingRequest = S['CreateEmbeddingRequest'];
export type EmbeddingResponse = S['CreateEmbeddingResponse'];
export type ImageRequest = S['CreateImageRequest'];
export type ImagesResponse = S['ImagesResponse'];
export type SpeechRequest = S['CreateSpeechRequest'];
export type SpeechEvent = S['CreateSpeechResponseStreamEvent'];
/** A speech answer as it streams: its audio's bytes as they come, or (`stream_format: sse`) its events. */
export type SpeechChunk = SpeechEvent | Uint8Array;
export type ModerationRequest = S['CreateModerationRequest'];
export type ModerationResponse = S['CreateModerationResponse'];
export type RerankRequest = S['CreateRerankRequest'];
export type RerankResponse = S['CreateRerankResponse'];
export type OpenAIUsage = S['CompletionUsage'];
export type Model = S['Model'];
export type ChatMessage = S['ChatCompletionRequestMessage'];
// Anthropic's Messages API
export type MessagesRequest = S['CreateMessageRequest'];
export type AnthropicMessage = S['AnthropicMessage'];
export type AnthropicEvent = S['AnthropicStreamEvent'];
export type AnthropicUsage = S['AnthropicUsage'];
export type AnthropicBlockParam = S['AnthropicContentBlockParam'];
export type AnthropicBlock = S['AnthropicContentBlock'];
// OpenAI's Responses API
export type ResponsesRequest = S['CreateResponseRequest'];
export type ResponseObject = S['ResponseObject'];
export type ResponseEvent = S['ResponseStreamEvent'];
export type ResponseInputItem = S['ResponseInputItem'];
export type ResponseOutputItem = S['ResponseOutputItem'];

/** What one request used, and how we know. */
export interface Meter {
  /** The provider (its configured name) of the route that answered. */
  provider: string;
  usage: Usage;
  /** `upstream`: the upstream reported the usage; `tokenizer`: it did not (or the stream was cut), so we counted. */
  counted: 'upstream' | 'tokenizer';
  /** The grade (`<size>/<quality>`) its images were made at, when the answer or the request says. */
  grade?: string;
}

export type UpstreamFailure =
  | 'connect' // refused, reset, DNS: nothing reached the upstream
  | 'timeout' // connect, first byte, idle or total limit
  | 'status' // the upstream answered with an HTTP error status
  | 'protocol' // an answer we cannot read, or an error event inside a stream
  | 'invalid' // the request cannot be sent to this upstream as written (the caller's fault; nothing was sent)
  | 'aborted'; // our own caller went away

export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    readonly reason: UpstreamFailure,
    message: string,
    /** HTTP status of the upstream's answer, for reason 'status'; 400 for 'invalid'. */
    readonly status?: number,
    /** The upstream's own message (or ours, for 'invalid'), safe to show to a caller whose request was at fault. */
    readonly upstreamMessage?: string,
  ) {
    super(message);
  }
}
