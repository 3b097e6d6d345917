/**
 * Translation between the OpenAI wire format (our contract) and Gemini's generateContent / embedContent, without
 * any I/O. What a request asks for that Gemini cannot express is a 400 (an UpstreamError with status 400, which
 * the gateway passes to the client as the caller's fault) rather than something silently dropped, except options
 * that only tune the answer (logit_bias, logprobs, user, metadata...), which are ignored.
 */
import crypto from 'node:crypto';
import {
  UpstreamError,
  type ChatChunk,
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type EmbeddingRequest,
  type EmbeddingResponse,
  type OpenAIUsage,
} from '../../types';
import {
  badRequest as refused,
  chatChunk,
  isObject,
  openaiUsage,
  parseDataUrl as dataUrl,
  str,
  textOf as joinedText,
  usageChunk,
} from '../shared';
import type {
  BatchEmbedContentsResponse,
  EmbedContentRequest,
  EmbedContentResponse,
  GeminiContent,
  GeminiFunctionDeclaration,
  GeminiPart,
  GenerateContentRequest,
  GenerateContentResponse,
  GenerationConfig,
  UsageMetadata,
} from './wire';

type FinishReason = ChatResponse['choices'][number]['finish_reason'];
type ToolCall = NonNullable<ChatResponse['choices'][number]['message']['tool_calls']>[number];
type ToolCallDelta = NonNullable<ChatChunk['choices'][number]['delta']['tool_calls']>[number];

/**
 * Gemini 3 rejects a model turn with function calls whose first functionCall part lacks the thought signature it
 * came with. Clients speaking OpenAI's format cannot carry it, so the provider remembers signatures by tool call
 * id; for a tool call it does not know (another instance, a restart, a conversation from another model) it sends
 * the value Google documents for exactly that case, which skips the check.
 */
export const SKIP_THOUGHT_SIGNATURE = 'skip_thought_signature_validator';

export interface SignatureStore {
  get(toolCallId: string): string | undefined;
  set(toolCallId: string, signature: string): void;
}

const badRequest = (message: string) => refused('gemini', message);

export const randomId = (bytes = 12): string => crypto.randomBytes(bytes).toString('base64url');

/** `gemini-2.5-flash` → `models/gemini-2.5-flash`; a full resource name (`tunedModels/x`) is kept. */
export function resourceName(model: string): string {
  return model.includes('/') ? model : `models/${model}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Chat request

type ContentPart = {
  type: string;
  text?: string;
  refusal?: string;
  image_url?: { url: string };
  input_audio?: { data: string; format: string };
  file?: { file_data?: string; file_id?: string; filename?: string };
};

function partsOf(content: unknown): ContentPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (Array.isArray(content)) return content as ContentPart[];
  return [];
}

/** The text of a system, developer or tool message (only text parts are allowed there). */
const textOf = (content: unknown): string => joinedText(content);

const EXTENSION_MIME: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
  wav: 'audio/wav',
  mp3: 'audio/mp3',
  txt: 'text/plain',
};

function mimeFromName(name: string | undefined): string | undefined {
  const m = name && /\.([a-z0-9]+)$/i.exec(name.split(/[?#]/)[0]);
  return m ? EXTENSION_MIME[m[1].toLowerCase()] : undefined;
}

/** `data:image/png;base64,AAAA` → inlineData; a data URL that is not base64 is re-encoded. */
function inlineData(url: string): { mimeType: string; data: string } | null {
  const d = dataUrl(url);
  return d && { mimeType: d.mediaType, data: d.data };
}

function userPart(p: ContentPart, where: string): GeminiPart | null {
  switch (p.type) {
    case 'text':
      return p.text ? { text: p.text } : null;
    case 'image_url': {
      const url = p.image_url?.url ?? '';
      const inline = inlineData(url);
      if (inline) return { inlineData: inline };
      // Gemini reads a URL as whatever it finds there: a video would be billed by the second. Only a URL that names
      // an image (by its extension) is sent, declared as that image type.
      const mimeType = mimeFromName(url);
      if (!mimeType?.startsWith('image/'))
        throw badRequest(
          `${where}.image_url.url: send images as data URLs, or URLs ending in an image extension (.png, .jpg, .webp...)`,
        );
      return { fileData: { mimeType, fileUri: url } };
    }
    case 'input_audio':
      return { inlineData: { mimeType: `audio/${p.input_audio?.format ?? 'wav'}`, data: p.input_audio?.data ?? '' } };
    case 'file': {
      const f = p.file ?? {};
      if (!f.file_data) throw badRequest(`${where}: file_id inputs are not supported by this model; send file_data`);
      const inline = inlineData(f.file_data);
      return { inlineData: inline ?? { mimeType: mimeFromName(f.filename) ?? 'application/pdf', data: f.file_data } };
    }
    default:
      throw badRequest(`${where}: content parts of type '${p.type}' are not supported by this model`);
  }
}

function parseArguments(args: string, where: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = args.trim() === '' ? {} : JSON.parse(args);
  } catch {
    throw badRequest(`${where}.function.arguments is not valid JSON`);
  }
  if (!isObject(parsed)) throw badRequest(`${where}.function.arguments must be a JSON object`);
  return parsed;
}

/** A JSON Schema as Gemini's `*JsonSchema` fields take it: only the `$schema` marker is removed. */
export function cleanSchema(schema: unknown): Record<string, unknown> | undefined {
  if (!isObject(schema)) return undefined;
  const { $schema: _dropped, ...rest } = schema;
  return rest;
}

export function toGeminiRequest(body: ChatRequest, signatures?: Pick<SignatureStore, 'get'>): GenerateContentRequest {
  const { system, contents } = conversation(body.messages, signatures);
  const req: GenerateContentRequest = { contents };
  if (system.length) req.systemInstruction = { parts: system };
  Object.assign(req, tools(body));
  const g = generationConfig(body);
  if (Object.keys(g).length) req.generationConfig = g;
  return req;
}

/** The messages as Gemini's contents (roles user and model, same roles merged) and system instruction. */
function conversation(
  messages: ChatMessage[],
  signatures?: Pick<SignatureStore, 'get'>,
): { system: GeminiPart[]; contents: GeminiContent[] } {
  const system: GeminiPart[] = [];
  const contents: GeminiContent[] = [];
  const toolNames = new Map<string, string>();
  const push = (role: GeminiContent['role'], parts: GeminiPart[]) => {
    if (!parts.length) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  messages.forEach((m: ChatMessage, i) => {
    const where = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer': {
        const text = textOf(m.content);
        if (text) system.push({ text });
        return;
      }
      case 'user':
        return push(
          'user',
          partsOf(m.content).flatMap((p, j) => userPart(p, `${where}.content[${j}]`) ?? []),
        );
      case 'assistant':
        return push(
          'model',
          modelParts(m as Extract<ChatMessage, { role: 'assistant' }>, where, toolNames, signatures),
        );
      case 'tool': {
        const t = m as Extract<ChatMessage, { role: 'tool' }>;
        const name = toolNames.get(t.tool_call_id);
        if (!name)
          throw badRequest(
            `${where}: tool_call_id '${t.tool_call_id}' does not answer a tool call of an earlier assistant message`,
          );
        return push('user', [{ functionResponse: { name, response: toolResponse(textOf(t.content)) } }]);
      }
      default: {
        // The deprecated `function` role: a function result named by the message.
        const f = m as unknown as { role: string; name?: string; content?: unknown };
        if (f.role === 'function' && f.name)
          return push('user', [{ functionResponse: { name: f.name, response: toolResponse(textOf(f.content)) } }]);
        throw badRequest(`${where}: role '${f.role}' is not supported`);
      }
    }
  });
  return { system, contents };
}

/** An assistant message: its text, then its tool calls (the first one with its thought signature). */
function modelParts(
  a: Extract<ChatMessage, { role: 'assistant' }>,
  where: string,
  toolNames: Map<string, string>,
  signatures?: Pick<SignatureStore, 'get'>,
): GeminiPart[] {
  const parts: GeminiPart[] = [];
  const text = textOf(a.content);
  if (text) parts.push({ text });
  const legacy = a.function_call ? [{ id: '', type: 'function' as const, function: a.function_call }] : [];
  [...(a.tool_calls ?? []), ...legacy].forEach((c, j) => {
    if (c.id) toolNames.set(c.id, c.function.name);
    const part: GeminiPart = {
      functionCall: { name: c.function.name, args: parseArguments(c.function.arguments, `${where}.tool_calls[${j}]`) },
    };
    const signature = (c.id && signatures?.get(c.id)) || (j === 0 ? SKIP_THOUGHT_SIGNATURE : undefined);
    if (signature) part.thoughtSignature = signature;
    parts.push(part);
  });
  return parts;
}

/** Function declarations and the tool config, from tools or the deprecated functions. */
function tools(body: ChatRequest): Pick<GenerateContentRequest, 'tools' | 'toolConfig'> {
  const declarations: GeminiFunctionDeclaration[] = [
    ...(body.tools ?? []).filter((t) => t.type === 'function').map((t) => t.function),
    ...(body.functions ?? []),
  ].map((f) => {
    const parameters = cleanSchema(f.parameters);
    return {
      name: f.name,
      ...(f.description ? { description: f.description } : {}),
      ...(parameters ? { parametersJsonSchema: parameters } : {}),
    };
  });
  if (!declarations.length) return {};
  const out: Pick<GenerateContentRequest, 'tools' | 'toolConfig'> = { tools: [{ functionDeclarations: declarations }] };
  const choice = body.tool_choice ?? legacyChoice(body.function_call);
  if (choice === 'auto') out.toolConfig = { functionCallingConfig: { mode: 'AUTO' } };
  else if (choice === 'required') out.toolConfig = { functionCallingConfig: { mode: 'ANY' } };
  else if (choice === 'none') out.toolConfig = { functionCallingConfig: { mode: 'NONE' } };
  else if (choice && typeof choice === 'object')
    out.toolConfig = { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.function.name] } };
  return out;
}

function generationConfig(body: ChatRequest): GenerationConfig {
  const g: GenerationConfig = {};
  const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  const set = <K extends keyof GenerationConfig>(k: K, v: GenerationConfig[K] | undefined) => {
    if (v !== undefined) g[k] = v;
  };
  set('temperature', num(body.temperature));
  set('topP', num(body.top_p));
  set('topK', num(body.top_k)); // not OpenAI's, but a common extension
  set('maxOutputTokens', num(body.max_completion_tokens) ?? num(body.max_tokens));
  if (typeof body.stop === 'string') g.stopSequences = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length) g.stopSequences = body.stop;
  set('candidateCount', num(body.n));
  set('seed', num(body.seed));
  set('presencePenalty', num(body.presence_penalty));
  set('frequencyPenalty', num(body.frequency_penalty));
  const format = body.response_format;
  if (format?.type === 'json_object') g.responseMimeType = 'application/json';
  if (format?.type === 'json_schema') {
    g.responseMimeType = 'application/json';
    const schema = cleanSchema((format as { json_schema?: { schema?: unknown } }).json_schema?.schema);
    if (schema) g.responseJsonSchema = schema;
  }
  return g;
}

function legacyChoice(fc: ChatRequest['function_call']): ChatRequest['tool_choice'] {
  if (fc === 'auto' || fc === 'none') return fc;
  if (fc && typeof fc === 'object') return { type: 'function', function: { name: fc.name } };
  return undefined;
}

/** A tool's result: its JSON if that is an object, else the text under `content`. */
export function toolResponse(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObject(parsed)) return parsed;
  } catch {
    // not JSON: sent as text
  }
  return { content: text };
}

// ---------------------------------------------------------------------------------------------------------------
// Chat response

const FILTERED = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
]);

export function finishReason(reason: string, hasToolCalls: boolean): FinishReason {
  if (reason === 'MAX_TOKENS') return 'length';
  if (FILTERED.has(reason)) return 'content_filter';
  return hasToolCalls ? 'tool_calls' : 'stop';
}

/**
 * Gemini's usageMetadata as OpenAI's usage: thinking tokens are output tokens, as OpenAI counts reasoning; cached
 * content is part of promptTokenCount, as cached tokens are part of OpenAI's prompt_tokens.
 */
export function toUsage(m: UsageMetadata): OpenAIUsage {
  return openaiUsage({
    prompt: (m.promptTokenCount ?? 0) + (m.toolUsePromptTokenCount ?? 0),
    completion: (m.candidatesTokenCount ?? 0) + (m.thoughtsTokenCount ?? 0),
    ...(m.cachedContentTokenCount !== undefined ? { cached: m.cachedContentTokenCount } : {}),
    ...(m.thoughtsTokenCount !== undefined ? { reasoning: m.thoughtsTokenCount } : {}),
  });
}

const visible = (p: GeminiPart) => !p.thought;

function toolCall(p: GeminiPart, signatures?: Pick<SignatureStore, 'set'>): ToolCall {
  const id = `call_${randomId()}`;
  if (p.thoughtSignature) signatures?.set(id, p.thoughtSignature);
  return {
    id,
    type: 'function',
    function: { name: p.functionCall!.name, arguments: JSON.stringify(p.functionCall!.args ?? {}) },
  };
}

const now = () => Math.floor(Date.now() / 1000);

export function fromGeminiResponse(
  res: GenerateContentResponse,
  model: string,
  signatures?: Pick<SignatureStore, 'set'>,
): ChatResponse {
  const candidates = res.candidates ?? [];
  let choices: ChatResponse['choices'];
  if (!candidates.length) {
    if (!res.promptFeedback?.blockReason)
      throw new UpstreamError('protocol', 'the upstream answered without any candidate');
    choices = [
      {
        index: 0,
        message: { role: 'assistant', content: '', refusal: null },
        logprobs: null,
        finish_reason: 'content_filter',
      },
    ];
  } else {
    choices = candidates.map((c, i) => {
      const parts = (c.content?.parts ?? []).filter(visible);
      const texts = parts.filter((p) => typeof p.text === 'string').map((p) => p.text!);
      const calls = parts.filter((p) => p.functionCall).map((p) => toolCall(p, signatures));
      const content = texts.length ? texts.join('') : calls.length ? null : '';
      return {
        index: c.index ?? i,
        message: { role: 'assistant' as const, content, refusal: null, ...(calls.length ? { tool_calls: calls } : {}) },
        logprobs: null,
        finish_reason: finishReason(c.finishReason ?? 'STOP', calls.length > 0),
      };
    });
  }
  return {
    id: `chatcmpl-${res.responseId ?? randomId()}`,
    object: 'chat.completion',
    created: now(),
    model,
    choices,
    ...(res.usageMetadata ? { usage: toUsage(res.usageMetadata) } : {}),
  };
}

/**
 * Turns the events of a streamGenerateContent answer (each a partial GenerateContentResponse) into chat chunks:
 * per candidate, a role chunk, then content and tool-call deltas, then a finish chunk; after the end, one usage
 * chunk (`choices: []`) from the last usageMetadata seen.
 */
export class ChatStreamTranslator {
  private id = '';
  private readonly created = now();
  private readonly started = new Set<number>();
  private readonly finished = new Set<number>();
  /** Tool calls sent so far, per candidate: the index of the next one. */
  private readonly toolCalls = new Map<number, number>();
  private usage: OpenAIUsage | null = null;

  constructor(
    private readonly model: string,
    private readonly signatures?: Pick<SignatureStore, 'set'>,
  ) {}

  push(ev: GenerateContentResponse): ChatChunk[] {
    if (ev.error && typeof ev.error === 'object') {
      throw new UpstreamError(
        'protocol',
        'the upstream reported an error inside the stream',
        undefined,
        str(ev.error.message),
      );
    }
    if (!this.id) this.id = `chatcmpl-${ev.responseId ?? randomId()}`;
    if (ev.usageMetadata) this.usage = toUsage(ev.usageMetadata);
    const out = this.chunks(ev);
    // The usage so far (thinking included, which the stream never shows) rides on a chunk that ends nothing: a
    // stream cut after it is billed at least that. The whole request's comes last, in its own chunk (end()).
    const carrier = [...out].reverse().find((c) => !c.choices.some((x) => x.finish_reason));
    if (ev.usageMetadata && carrier) carrier.usage = this.usage;
    return out;
  }

  private chunks(ev: GenerateContentResponse): ChatChunk[] {
    const out: ChatChunk[] = [];
    const candidates = ev.candidates ?? [];
    if (!candidates.length && ev.promptFeedback?.blockReason && !this.finished.has(0)) {
      this.start(0, out);
      out.push(this.chunk(0, {}, 'content_filter'));
      this.finished.add(0);
    }
    candidates.forEach((c, i) => {
      const index = c.index ?? i;
      this.start(index, out);
      const parts = (c.content?.parts ?? []).filter(visible);
      const text = parts
        .filter((p) => typeof p.text === 'string' && p.text)
        .map((p) => p.text!)
        .join('');
      const calls: ToolCallDelta[] = parts
        .filter((p) => p.functionCall)
        .map((p) => {
          const n = this.toolCalls.get(index) ?? 0;
          this.toolCalls.set(index, n + 1);
          return { index: n, ...toolCall(p, this.signatures) };
        });
      if (text || calls.length)
        out.push(
          this.chunk(
            index,
            { ...(text ? { content: text } : {}), ...(calls.length ? { tool_calls: calls } : {}) },
            null,
          ),
        );
      if (c.finishReason && !this.finished.has(index)) {
        out.push(this.chunk(index, {}, finishReason(c.finishReason, (this.toolCalls.get(index) ?? 0) > 0)));
        this.finished.add(index);
      }
    });
    return out;
  }

  /** After the last event: the usage chunk, or an error if the stream was cut before every choice finished. */
  end(): ChatChunk[] {
    if (!this.finished.size || [...this.started].some((i) => !this.finished.has(i))) {
      throw new UpstreamError('protocol', 'the upstream stream ended without a finish reason');
    }
    if (!this.usage) return [];
    return [usageChunk(this.base(), this.usage)];
  }

  private start(index: number, out: ChatChunk[]): void {
    if (this.started.has(index)) return;
    this.started.add(index);
    out.push(this.chunk(index, { role: 'assistant', content: '' }, null));
  }

  private chunk(index: number, delta: ChatChunk['choices'][number]['delta'], finish: FinishReason | null): ChatChunk {
    return chatChunk(this.base(), index, delta, finish);
  }

  private base() {
    return { id: this.id, created: this.created, model: this.model };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Embeddings

export interface EmbedCall {
  method: 'embedContent' | 'batchEmbedContents';
  body: EmbedContentRequest | { requests: EmbedContentRequest[] };
  texts: string[];
}

/** One string → embedContent; a list of strings → batchEmbedContents. Token arrays cannot be sent to Gemini. */
export function toEmbedCall(body: EmbeddingRequest, model: string): EmbedCall {
  const input = body.input as unknown;
  const texts =
    typeof input === 'string'
      ? [input]
      : Array.isArray(input) && input.every((x) => typeof x === 'string')
        ? (input as string[])
        : null;
  if (!texts) throw badRequest('token arrays are not supported by this model');
  const request = (text: string): EmbedContentRequest => ({
    model: resourceName(model),
    content: { parts: [{ text }] },
    ...(typeof body.dimensions === 'number' ? { outputDimensionality: body.dimensions } : {}),
  });
  if (typeof input === 'string') return { method: 'embedContent', body: request(input), texts };
  return { method: 'batchEmbedContents', body: { requests: texts.map(request) }, texts };
}

/** Gemini reports no token count for embeddings: the answer has none, and the gateway counts the input itself. */
export function fromEmbedResponse(
  call: EmbedCall,
  res: EmbedContentResponse & BatchEmbedContentsResponse,
  model: string,
): EmbeddingResponse {
  const vectors = call.method === 'embedContent' ? [res.embedding] : res.embeddings;
  if (
    !Array.isArray(vectors) ||
    vectors.length !== call.texts.length ||
    !vectors.every((v) => Array.isArray(v?.values))
  ) {
    throw new UpstreamError('protocol', 'the upstream answered with embeddings we cannot read');
  }
  return {
    object: 'list',
    data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: v!.values! })),
    model,
  } as EmbeddingResponse;
}
