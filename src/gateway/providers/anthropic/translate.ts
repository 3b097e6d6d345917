/**
 * OpenAI chat ⇄ Anthropic Messages, as pure functions (no I/O): the request body, the answer, and a state machine that
 * turns Anthropic's stream events into OpenAI chunks. Anthropic's wire format (API version 2023-06-01) is described
 * by the few local types below; OpenAI's comes from the contract.
 */
import { UpstreamError, type ChatChunk, type ChatRequest, type ChatResponse, type OpenAIUsage } from '../../types';
import {
  badRequest as refused,
  chatChunk,
  openaiUsage,
  parseDataUrl,
  textOf,
  textParts,
  toolInput,
  usageChunk,
} from '../shared';
import type { components } from '../../../../generated/openapi';

type S = components['schemas'];
type ToolCall = S['ChatCompletionMessageToolCall'];
type ToolCallChunk = S['ChatCompletionMessageToolCallChunk'];
type FinishReason = ChatResponse['choices'][number]['finish_reason'];
type Delta = ChatChunk['choices'][number]['delta'];

// ---------------------------------------------------------------------------------------------------------------
// Anthropic's side of the wire

export type ImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

export type RequestBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: ImageSource }
  | { type: 'document'; source: { type: 'base64'; media_type: string; data: string }; title?: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string | { type: 'text'; text: string }[] };

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: RequestBlock[];
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

export type AnthropicToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  messages: AnthropicMessage[];
  system?: string;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id: string };
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  stream?: boolean;
}

export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

export type ResponseBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: string; [k: string]: unknown }; // thinking, server tools...: not shown

export interface AnthropicResponse {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ResponseBlock[];
  stop_reason: string | null;
  stop_sequence?: string | null;
  usage: AnthropicUsage;
}

/** One event of a stream (`data:` of each SSE event; its `type` repeats the SSE `event:` name). */
export type StreamEvent =
  | { type: 'message_start'; message: Partial<AnthropicResponse> }
  | {
      type: 'content_block_start';
      index: number;
      content_block: { type: string; text?: string; id?: string; name?: string; input?: unknown };
    }
  | { type: 'content_block_delta'; index: number; delta: { type: string; text?: string; partial_json?: string } }
  | { type: 'content_block_stop'; index: number }
  | {
      type: 'message_delta';
      delta: { stop_reason?: string | null; stop_sequence?: string | null };
      usage?: AnthropicUsage;
    }
  | { type: 'message_stop' }
  | { type: 'ping' }
  | { type: 'error'; error: { type?: string; message?: string } };

// ---------------------------------------------------------------------------------------------------------------
// Request: OpenAI chat → Anthropic Messages

/** The caller's fault: refused before anything is sent, as the upstream itself would refuse it (not retried). */
export const badRequest = (message: string): UpstreamError => refused('anthropic', message);

/** Anthropic accepts temperature in 0..1 (OpenAI: 0..2). */
const MAX_TEMPERATURE = 1;

/** `maxOutputTokens`: the output allowance, Anthropic's required max_tokens. */
export function toAnthropicRequest(
  body: ChatRequest,
  model: string,
  maxOutputTokens: number,
  stream: boolean,
): AnthropicRequest {
  if (typeof body.n === 'number' && body.n > 1)
    throw badRequest(`'n' must be 1: this model returns a single choice (got ${body.n})`);
  if (body.functions?.length || body.function_call) {
    throw badRequest("'functions' and 'function_call' are not supported by this model: use 'tools' and 'tool_choice'");
  }
  const { system, messages } = conversation(body.messages);
  const out: AnthropicRequest = {
    model,
    max_tokens: maxOutputTokens,
    messages,
  };
  if (system.length) out.system = system.join('\n\n');
  const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : [];
  if (stop.length) out.stop_sequences = stop;
  if (typeof body.temperature === 'number') out.temperature = Math.min(body.temperature, MAX_TEMPERATURE);
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  // top_k is Anthropic's own sampling option: a client that knows it is talking to Claude may send it.
  if (typeof body.top_k === 'number') out.top_k = body.top_k;
  const user = body.user || body.safety_identifier;
  if (user) out.metadata = { user_id: user };
  const tools = (body.tools ?? []).filter((t) => t.type === 'function');
  if (tools.length) {
    out.tools = tools.map((t) => ({
      name: t.function.name,
      ...(t.function.description ? { description: t.function.description } : {}),
      input_schema: t.function.parameters ?? { type: 'object', properties: {} },
    }));
    const choice = toolChoice(body.tool_choice, body.parallel_tool_calls === false);
    if (choice) out.tool_choice = choice;
  }
  if (stream) out.stream = true;
  return out;
}

/** The messages as Anthropic's: system text apart, same-role turns merged (user and assistant must alternate). */
function conversation(input: ChatRequest['messages']): { system: string[]; messages: AnthropicMessage[] } {
  const system: string[] = [];
  const messages: AnthropicMessage[] = [];
  const push = (role: AnthropicMessage['role'], content: RequestBlock[]) => {
    const prev = messages[messages.length - 1];
    if (prev?.role === role) prev.content.push(...content);
    else messages.push({ role, content });
  };
  input.forEach((m, i) => {
    const where = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer': {
        const text = textParts('anthropic', m.content, where);
        if (text) system.push(text);
        return;
      }
      case 'user':
        return push('user', userBlocks(m.content as S['ChatCompletionRequestUserMessage']['content'], where));
      case 'assistant': {
        const blocks = assistantBlocks(m as S['ChatCompletionRequestAssistantMessage'], where);
        if (blocks.length) push('assistant', blocks);
        return;
      }
      case 'tool': {
        const t = m as S['ChatCompletionRequestToolMessage'];
        const content =
          typeof t.content === 'string' ? t.content : t.content.map((p) => ({ type: 'text' as const, text: p.text }));
        return push('user', [{ type: 'tool_result', tool_use_id: t.tool_call_id, content }]);
      }
      default:
        throw badRequest(`${where}.role '${(m as { role: string }).role}' is not supported by this model`);
    }
  });
  return { system, messages };
}

function userBlocks(content: S['ChatCompletionRequestUserMessage']['content'], where: string): RequestBlock[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part, j): RequestBlock => {
    const at = `${where}.content[${j}]`;
    const p = part as Partial<
      S['ChatCompletionRequestMessageContentPartText'] &
        Omit<S['ChatCompletionRequestMessageContentPartImage'], 'type'> &
        Omit<S['ChatCompletionRequestMessageContentPartFile'], 'type'>
    >;
    switch (part.type) {
      case 'text':
        return { type: 'text', text: p.text ?? '' };
      case 'image_url': {
        const url = p.image_url?.url ?? '';
        if (!url.startsWith('data:')) return { type: 'image', source: { type: 'url', url } };
        const data = parseDataUrl(url);
        if (!data) throw badRequest(`${at}.image_url.url is not a valid data URL (data:<media type>;base64,<data>)`);
        return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
      }
      case 'file': {
        const data = p.file?.file_data ? parseDataUrl(p.file.file_data) : null;
        if (!data)
          throw badRequest(
            `${at}.file: only inline files (file_data as a base64 data URL) are supported by this model`,
          );
        return {
          type: 'document',
          source: { type: 'base64', media_type: data.mediaType, data: data.data },
          ...(p.file?.filename ? { title: p.file.filename } : {}),
        };
      }
      default:
        throw badRequest(`${at}: content parts of type '${part.type}' are not supported by this model`);
    }
  });
}

function assistantBlocks(m: S['ChatCompletionRequestAssistantMessage'], where: string): RequestBlock[] {
  const blocks: RequestBlock[] = [];
  const content = m.content;
  const text = textOf(content);
  // Anthropic refuses empty text blocks; an assistant turn that only calls tools has none.
  if (text) blocks.push({ type: 'text', text });
  (m.tool_calls ?? []).forEach((call, k) => {
    if (call.type !== 'function') throw badRequest(`${where}.tool_calls[${k}]: only function tool calls are supported`);
    blocks.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: toolInput('anthropic', call.function.arguments, `${where}.tool_calls[${k}]`),
    });
  });
  return blocks;
}

function toolChoice(choice: ChatRequest['tool_choice'], noParallel: boolean): AnthropicToolChoice | undefined {
  const parallel = noParallel ? { disable_parallel_tool_use: true } : {};
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any', ...parallel };
  if (choice && typeof choice === 'object') return { type: 'tool', name: choice.function.name, ...parallel };
  if (choice === 'auto' || noParallel) return { type: 'auto', ...parallel };
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Answer: Anthropic Messages → OpenAI chat

export function finishReason(stopReason: string | null | undefined): FinishReason {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default: // end_turn, stop_sequence, pause_turn
      return 'stop';
  }
}

/** Anthropic's usage as OpenAI's: cache reads and writes are prompt tokens too (their prices differ: see billing). */
export function toUsage(u: AnthropicUsage): OpenAIUsage {
  const read = u.cache_read_input_tokens ?? 0;
  const write = u.cache_creation_input_tokens ?? 0;
  const cacheReported =
    typeof u.cache_read_input_tokens === 'number' || typeof u.cache_creation_input_tokens === 'number';
  return openaiUsage({
    prompt: (u.input_tokens ?? 0) + write + read,
    completion: u.output_tokens ?? 0,
    ...(cacheReported ? { cached: read, cacheWrite: write } : {}),
  });
}

export const chatId = (messageId: string | undefined): string => `chatcmpl-${messageId ?? 'anthropic'}`;

export function fromAnthropicResponse(msg: AnthropicResponse, created: number): ChatResponse {
  if (!msg || !Array.isArray(msg.content))
    throw new UpstreamError('protocol', 'the upstream answer is not an Anthropic message');
  let text = '';
  let hasText = false;
  const toolCalls: ToolCall[] = [];
  for (const b of msg.content) {
    if (b.type === 'text') {
      text += (b as { text: string }).text;
      hasText = true;
    } else if (b.type === 'tool_use') {
      const t = b as { id: string; name: string; input: unknown };
      toolCalls.push({
        id: t.id,
        type: 'function',
        function: { name: t.name, arguments: JSON.stringify(t.input ?? {}) },
      });
    }
  }
  return {
    id: chatId(msg.id),
    object: 'chat.completion',
    created,
    model: msg.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: hasText ? text : toolCalls.length ? null : '',
          refusal: null,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason(msg.stop_reason),
      },
    ],
    usage: toUsage(msg.usage ?? {}),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Stream: Anthropic events → OpenAI chunks

/**
 * Feed it each event in order; it returns the chunks to send. After `message_stop` it is `done`, and the last chunk
 * it returned carried the usage (`choices: []`).
 */
export class StreamTranslator {
  done = false;
  private id = chatId(undefined);
  private model: string;
  private usage: AnthropicUsage = {};
  private started = false;
  private finished = false;
  /** Anthropic content block index → OpenAI tool-call index (0-based over tool blocks only). */
  private readonly tools = new Map<number, { index: number; hasArgs: boolean }>();

  constructor(
    private readonly created: number,
    model: string,
  ) {
    this.model = model;
  }

  push(ev: StreamEvent): ChatChunk[] {
    switch (ev.type) {
      case 'message_start': {
        if (this.started) return [];
        this.started = true;
        this.id = chatId(ev.message?.id);
        if (ev.message?.model) this.model = ev.message.model;
        this.mergeUsage(ev.message?.usage);
        // the prompt as Anthropic counted it: what a stream cut before message_delta has certainly cost
        return [{ ...this.chunk({ role: 'assistant', content: '' }), usage: toUsage(this.usage) }];
      }
      case 'content_block_start':
        return [...this.start(), ...this.blockStart(ev)];
      case 'content_block_delta':
        return [...this.start(), ...this.blockDelta(ev)];
      case 'content_block_stop': {
        // A tool called without arguments: OpenAI's clients expect a JSON object, not an empty string.
        const tool = this.tools.get(ev.index);
        if (tool && !tool.hasArgs) {
          tool.hasArgs = true;
          return [this.toolChunk({ index: tool.index, function: { arguments: '{}' } })];
        }
        return [];
      }
      case 'message_delta': {
        const out = this.start();
        this.mergeUsage(ev.usage);
        if (ev.delta?.stop_reason && !this.finished) out.push(this.finish(ev.delta.stop_reason));
        return out;
      }
      case 'message_stop': {
        const out = this.start();
        if (!this.finished) out.push(this.finish('end_turn'));
        this.done = true;
        out.push(usageChunk(this.base(), toUsage(this.usage)));
        return out;
      }
      case 'error':
        throw new UpstreamError(
          'protocol',
          'the upstream reported an error inside the stream',
          undefined,
          ev.error?.message || undefined,
        );
      default: // ping, and event types newer than this code
        return [];
    }
  }

  private blockStart(ev: Extract<StreamEvent, { type: 'content_block_start' }>): ChatChunk[] {
    const b = ev.content_block ?? { type: '' };
    if (b.type === 'text') return b.text ? [this.chunk({ content: b.text })] : [];
    if (b.type !== 'tool_use') return [];
    const index = this.tools.size;
    const input = b.input && typeof b.input === 'object' && Object.keys(b.input).length ? JSON.stringify(b.input) : '';
    this.tools.set(ev.index, { index, hasArgs: input !== '' });
    return [this.toolChunk({ index, id: b.id, type: 'function', function: { name: b.name, arguments: input } })];
  }

  private blockDelta(ev: Extract<StreamEvent, { type: 'content_block_delta' }>): ChatChunk[] {
    const d = ev.delta ?? { type: '' };
    if (d.type === 'text_delta' && d.text) return [this.chunk({ content: d.text })];
    const tool = d.type === 'input_json_delta' && d.partial_json ? this.tools.get(ev.index) : undefined;
    if (!tool) return [];
    tool.hasArgs = true;
    return [this.toolChunk({ index: tool.index, function: { arguments: d.partial_json } })];
  }

  /** The role chunk, if the stream skipped message_start. */
  private start(): ChatChunk[] {
    if (this.started) return [];
    this.started = true;
    return [this.chunk({ role: 'assistant', content: '' })];
  }

  private finish(stopReason: string): ChatChunk {
    this.finished = true;
    return this.chunk({}, finishReason(stopReason));
  }

  private mergeUsage(u: AnthropicUsage | undefined): void {
    // message_delta's usage is cumulative; fields it leaves out (or null) keep message_start's value.
    for (const [k, v] of Object.entries(u ?? {}))
      if (typeof v === 'number') (this.usage as Record<string, number>)[k] = v;
  }

  private toolChunk(call: ToolCallChunk): ChatChunk {
    return this.chunk({ tool_calls: [call] });
  }

  private chunk(delta: Delta, finish: FinishReason | null = null): ChatChunk {
    return { ...chatChunk(this.base(), 0, delta, finish), usage: null };
  }

  private base() {
    return { id: this.id, created: this.created, model: this.model };
  }
}
