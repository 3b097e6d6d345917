/**
 * The parts of the Gemini API's REST wire format (generativelanguage v1beta) that the gemini provider reads and
 * writes. Only what we use is listed; Gemini adds fields freely, and unknown ones are ignored.
 */

export interface GeminiPart {
  text?: string;
  /** A thought summary (only sent when thoughts are asked for, which we never do). */
  thought?: boolean;
  /** Opaque, base64: Gemini 3 requires it back on the first functionCall part of a model turn. */
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: { name: string; args?: Record<string, unknown>; id?: string };
  functionResponse?: { name: string; response: Record<string, unknown>; id?: string };
}

export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  /** JSON Schema, as the client wrote it (Gemini's `parameters` only takes an OpenAPI 3.0 subset). */
  parametersJsonSchema?: Record<string, unknown>;
}

export interface GenerationConfig {
  temperature?: number;
  topP?: number;
  topK?: number;
  maxOutputTokens?: number;
  stopSequences?: string[];
  candidateCount?: number;
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseMimeType?: string;
  /** JSON Schema (Gemini's `responseSchema` only takes an OpenAPI 3.0 subset). */
  responseJsonSchema?: Record<string, unknown>;
}

export interface GenerateContentRequest {
  contents: GeminiContent[];
  systemInstruction?: { parts: GeminiPart[] };
  tools?: { functionDeclarations: GeminiFunctionDeclaration[] }[];
  toolConfig?: { functionCallingConfig: { mode: 'AUTO' | 'ANY' | 'NONE'; allowedFunctionNames?: string[] } };
  generationConfig?: GenerationConfig;
}

export interface GeminiCandidate {
  content?: { role?: string; parts?: GeminiPart[] };
  finishReason?: string;
  index?: number;
}

export interface UsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  totalTokenCount?: number;
  cachedContentTokenCount?: number;
  thoughtsTokenCount?: number;
  /** Input tokens of tool use (e.g. search grounding results), billed as input. */
  toolUsePromptTokenCount?: number;
}

export interface GenerateContentResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string };
  usageMetadata?: UsageMetadata;
  responseId?: string;
  modelVersion?: string;
  /** Only inside a stream: an error that ended it. */
  error?: GeminiError;
}

export interface GeminiError {
  code?: number;
  message?: string;
  status?: string;
  details?: { '@type'?: string; reason?: string }[];
}

export interface EmbedContentRequest {
  model: string;
  content: { parts: { text: string }[] };
  outputDimensionality?: number;
}

export interface EmbedContentResponse {
  embedding?: { values?: number[] };
}

export interface BatchEmbedContentsResponse {
  embeddings?: { values?: number[] }[];
}
