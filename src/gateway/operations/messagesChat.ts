/**
 * Anthropic's Messages served through OpenAI chat, for routes whose provider has no Messages of its own: the
 * request becomes a chat request, the chat answer an Anthropic message, and chat chunks Anthropic's stream events.
 * What chat cannot carry is dropped, as the README says: thinking (the upstream reasons as it does), server tools,
 * `top_k`, cache control (OpenAI caches prompts by itself).
 */
import type {
  AnthropicBlock,
  AnthropicBlockParam,
  AnthropicEvent,
  AnthropicMessage,
  ChatChunk,
  ChatMessage,
  ChatRequest,
  ChatResponse,
  MessagesRequest,
} from '../types';
import { toAnthropicUsage } from './anthropic';
import type { Bridge, Presented, StreamMapper } from './types';

type StopReason = AnthropicMessage['stop_reason'];

/** OpenAI's finish reasons as Anthropic's stop reasons. */
export function stopReason(finish: string | null | undefined): StopReason {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

const text = (content: string | { type: string; text?: string }[] | undefined | null): string =>
  typeof content === 'string'
    ? content
    : (content ?? []).map((b) => (b.type === 'text' ? (b.text ?? '') : '')).join('');

/** A user message's blocks: tool results first (as tool messages, right after the assistant's tool calls), then the rest. */
function userMessages(content: MessagesRequest['messages'][number]['content']): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const out: ChatMessage[] = [];
  const parts: { type: string; [k: string]: unknown }[] = [];
  for (const b of content as (AnthropicBlockParam & { type: string; [k: string]: unknown })[]) {
    if (b.type === 'tool_result') {
      const r = b as { tool_use_id: string; content?: string | { type: string; text?: string }[]; is_error?: boolean };
      out.push({
        role: 'tool',
        tool_call_id: r.tool_use_id,
        content: `${r.is_error ? 'Error: ' : ''}${text(r.content)}`,
      });
    } else if (b.type === 'text') parts.push({ type: 'text', text: b.text as string });
    else if (b.type === 'image') {
      const s = b.source as { type: string; media_type?: string; data?: string; url?: string };
      parts.push({
        type: 'image_url',
        image_url: { url: s.type === 'base64' ? `data:${s.media_type};base64,${s.data}` : (s.url ?? '') },
      });
    } else if (b.type === 'document') {
      const s = b.source as { type: string; media_type?: string; data?: string };
      if (s.type === 'base64')
        parts.push({
          type: 'file',
          file: { file_data: `data:${s.media_type};base64,${s.data}`, filename: (b.title as string) ?? 'document.pdf' },
        });
      else if (s.type === 'text') parts.push({ type: 'text', text: s.data ?? '' });
    }
  }
  if (parts.length) out.push({ role: 'user', content: parts as never });
  return out;
}

function assistantMessage(content: MessagesRequest['messages'][number]['content']): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const blocks = content as { type: string; text?: string; id?: string; name?: string; input?: unknown }[];
  const calls = blocks
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({
      id: b.id!,
      type: 'function' as const,
      function: { name: b.name!, arguments: JSON.stringify(b.input ?? {}) },
    }));
  const said = blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('');
  return {
    role: 'assistant',
    content: said || (calls.length ? null : ''),
    ...(calls.length ? { tool_calls: calls } : {}),
  };
}

function toolChoice(c: MessagesRequest['tool_choice']): Pick<ChatRequest, 'tool_choice' | 'parallel_tool_calls'> {
  if (!c) return {};
  const parallel = c.disable_parallel_tool_use ? { parallel_tool_calls: false } : {};
  if (c.type === 'any') return { tool_choice: 'required', ...parallel };
  if (c.type === 'tool' && c.name)
    return { tool_choice: { type: 'function', function: { name: c.name } }, ...parallel };
  if (c.type === 'none') return { tool_choice: 'none' };
  return { tool_choice: 'auto', ...parallel };
}

export function toChatRequest(body: MessagesRequest): ChatRequest {
  const messages: ChatMessage[] = [];
  // System blocks are separate paragraphs (Claude Code sends three: a header line, an identity, the instructions).
  const system =
    typeof body.system === 'string'
      ? body.system
      : (body.system ?? [])
          .map((b) => b.text)
          .filter(Boolean)
          .join('\n');
  if (system) messages.push({ role: 'system', content: system });
  for (const m of body.messages) {
    if (m.role === 'user') messages.push(...userMessages(m.content));
    else messages.push(assistantMessage(m.content));
  }
  // Client tools only: Anthropic's server tools have no chat equivalent.
  const tools = (body.tools ?? [])
    .filter((t) => t.input_schema && t.name)
    .map((t) => ({
      type: 'function' as const,
      function: { name: t.name!, ...(t.description ? { description: t.description } : {}), parameters: t.input_schema },
    }));
  return {
    model: body.model,
    messages,
    max_completion_tokens: body.max_tokens,
    ...(body.stop_sequences?.length ? { stop: body.stop_sequences.slice(0, 4) } : {}),
    ...(typeof body.temperature === 'number' ? { temperature: body.temperature } : {}),
    ...(typeof body.top_p === 'number' ? { top_p: body.top_p } : {}),
    ...(body.metadata?.user_id ? { user: body.metadata.user_id } : {}),
    ...(tools.length ? { tools, ...toolChoice(body.tool_choice) } : {}),
    ...(body.stream ? { stream: true } : {}),
  };
}

const messageId = (chatId: string) => `msg_${chatId.replace(/^chatcmpl-/, '')}`;

/** A tool call's arguments as Anthropic's `input` object (what is not a JSON object is kept as `{}`). */
function input(args: string | undefined): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function fromChatResponse(res: ChatResponse, model: string): AnthropicMessage {
  const choice = res.choices[0];
  const content: AnthropicBlock[] = [];
  if (choice?.message.content) content.push({ type: 'text', text: choice.message.content });
  for (const c of choice?.message.tool_calls ?? [])
    if ('function' in c)
      content.push({ type: 'tool_use', id: c.id, name: c.function.name, input: input(c.function.arguments) });
  const u = res.usage;
  const cached = u?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    id: messageId(res.id),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason(choice?.finish_reason),
    stop_sequence: null,
    usage: {
      input_tokens: (u?.prompt_tokens ?? 0) - cached,
      output_tokens: u?.completion_tokens ?? 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: cached,
    },
  };
}

/** Chat chunks as Anthropic's events: message_start, one content block per text run or tool call, message_delta, message_stop. */
export class ChatToMessagesStream implements StreamMapper<ChatChunk, AnthropicEvent> {
  private started = false;
  private block = -1;
  private open: 'text' | 'tool' | null = null;
  /** OpenAI tool-call index → the Anthropic block of its call, and the call's id. */
  private readonly tools = new Map<number, { block: number; id: string | undefined }>();
  private stop: StopReason = null;

  constructor(private readonly model: string) {}

  push(chunk: ChatChunk): AnthropicEvent[] {
    const out = this.start(chunk.id);
    const choice = chunk.choices[0];
    if (!choice) return out;
    const d = choice.delta ?? {};
    if (d.content) {
      if (this.open !== 'text') out.push(...this.openBlock('text', { type: 'text', text: '' }));
      out.push({ type: 'content_block_delta', index: this.block, delta: { type: 'text_delta', text: d.content } });
    }
    for (const t of d.tool_calls ?? []) {
      // A new call: an index not seen yet, or another id at a seen index (some servers repeat the id on every
      // fragment of a call, others number every call 0).
      const known = this.tools.get(t.index);
      if (!known || (t.id && t.id !== known.id)) {
        out.push(
          ...this.openBlock('tool', {
            type: 'tool_use',
            id: t.id ?? `toolu_${t.index}`,
            name: t.function?.name ?? '',
            input: {},
          }),
        );
        this.tools.set(t.index, { block: this.block, id: t.id });
      }
      if (t.function?.arguments)
        out.push({
          type: 'content_block_delta',
          index: this.tools.get(t.index)!.block,
          delta: { type: 'input_json_delta', partial_json: t.function.arguments },
        });
    }
    if (choice.finish_reason) this.stop = stopReason(choice.finish_reason);
    return out;
  }

  end(p: Presented): AnthropicEvent[] {
    const out = this.start('');
    if (this.open) out.push({ type: 'content_block_stop', index: this.block });
    this.open = null;
    out.push({
      type: 'message_delta',
      delta: { stop_reason: this.stop ?? 'end_turn', stop_sequence: null },
      usage: { ...toAnthropicUsage(p.usage) },
    });
    out.push({ type: 'message_stop' });
    return out;
  }

  private start(chatId: string): AnthropicEvent[] {
    if (this.started) return [];
    this.started = true;
    const message: AnthropicMessage = {
      id: messageId(chatId || 'chatcmpl-bridge'),
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    };
    return [{ type: 'message_start', message }, { type: 'ping' }]; // Anthropic pings right after message_start
  }

  private openBlock(kind: 'text' | 'tool', block: AnthropicBlock): AnthropicEvent[] {
    const out: AnthropicEvent[] = this.open ? [{ type: 'content_block_stop', index: this.block }] : [];
    this.block++;
    this.open = kind;
    out.push({ type: 'content_block_start', index: this.block, content_block: block });
    return out;
  }
}

export const chatBridge: Bridge<MessagesRequest, AnthropicMessage, AnthropicEvent, 'chat'> = {
  via: 'chat',
  when: (_model, native) => !native,
  request: (body) => toChatRequest(body),
  answer: (res, body) => fromChatResponse(res as ChatResponse, body.model),
  stream: (_body, model) => new ChatToMessagesStream(model) as StreamMapper<ChatChunk, AnthropicEvent>,
};
