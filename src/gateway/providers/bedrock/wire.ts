/**
 * The parts of Amazon Bedrock Runtime's REST wire format that the bedrock provider reads and writes: the Converse
 * API (POST /model/{modelId}/converse, /converse-stream) and the bodies of InvokeModel for the embedding models it
 * serves. Blobs (image and document bytes) travel as base64 strings in JSON. Only what we use is listed.
 */

export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';
export type DocumentFormat = 'pdf' | 'csv' | 'doc' | 'docx' | 'xls' | 'xlsx' | 'html' | 'txt' | 'md';

export type Source = { bytes: string } | { s3Location: { uri: string } };

export type ToolResultContent = { text: string } | { json: unknown };

export type ContentBlock =
  | { text: string }
  | { image: { format: ImageFormat; source: Source } }
  | { document: { format: DocumentFormat; name: string; source: Source } }
  | { toolUse: { toolUseId: string; name: string; input: unknown } }
  | { toolResult: { toolUseId: string; content: ToolResultContent[]; status?: 'success' | 'error' } }
  | { reasoningContent: { reasoningText?: { text: string; signature?: string }; redactedContent?: string } };

export interface ConverseMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

export interface ToolSpec {
  toolSpec: { name: string; description?: string; inputSchema: { json: Record<string, unknown> } };
}

export type ToolChoice = { auto: object } | { any: object } | { tool: { name: string } };

export interface ConverseRequest {
  messages: ConverseMessage[];
  system?: { text: string }[];
  inferenceConfig?: { maxTokens?: number; temperature?: number; topP?: number; stopSequences?: string[] };
  toolConfig?: { tools: ToolSpec[]; toolChoice?: ToolChoice };
  /** Fields only some models take, passed to the model as written (Claude's top_k). */
  additionalModelRequestFields?: Record<string, unknown>;
}

export interface ConverseUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

export interface ConverseResponse {
  output?: { message?: { role?: string; content?: ContentBlock[] } };
  stopReason?: string;
  usage?: ConverseUsage;
  metrics?: { latencyMs?: number };
}

/** ConverseStream's events, each the body of one event-stream message whose `:event-type` names it. */
export interface StreamEvents {
  messageStart: { role?: string };
  contentBlockStart: { contentBlockIndex?: number; start?: { toolUse?: { toolUseId?: string; name?: string } } };
  contentBlockDelta: {
    contentBlockIndex?: number;
    delta?: { text?: string; toolUse?: { input?: string }; reasoningContent?: { text?: string } };
  };
  contentBlockStop: { contentBlockIndex?: number };
  messageStop: { stopReason?: string };
  metadata: { usage?: ConverseUsage; metrics?: { latencyMs?: number } };
}

/** Bedrock's error body (the error's type is in the `x-amzn-errortype` header). */
export interface BedrockError {
  message?: string;
  Message?: string;
  __type?: string;
}
