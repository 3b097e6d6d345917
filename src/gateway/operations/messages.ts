/**
 * POST /v1/messages: Anthropic's Messages API. An `anthropic` route serves it natively (the request goes upstream as
 * written, `cache_control`, `thinking` and the `anthropic-beta` header included); any other chat route serves it
 * through chat (messagesChat.ts). Events are framed as Anthropic frames them, errors in Anthropic's shape.
 */
import type { ModelConfig } from '../../config';
import type { AnthropicEvent, AnthropicMessage, AnthropicUsage, MessagesRequest } from '../types';
import { ANTHROPIC_SSE, fromAnthropicUsage, toAnthropicUsage } from './anthropic';
import { chatBridge } from './messagesChat';
import { collect } from './openai';
import { anthropicBetas, anthropicBody } from './policy';
import type { Operation, Reader } from './types';

type Message = MessagesRequest['messages'][number];
type SystemBlock = Exclude<MessagesRequest['system'], string | undefined>[number];

/**
 * The body with its `system` messages' text moved to the end of the top-level `system`. Claude Code sends its
 * environment as a `system` message when it does not know the model id (any gateway's own), and neither Bedrock,
 * Vertex, a chat upstream nor every Anthropic-compatible server takes one; the instructions keep their words and
 * their order after the system prompt. The same body when there is none (no copy on the usual path).
 */
export function systemHoisted(body: MessagesRequest): MessagesRequest {
  if (!body.messages.some((m) => m.role === 'system')) return body;
  const blocks = (m: Message): SystemBlock[] =>
    typeof m.content === 'string'
      ? [{ type: 'text', text: m.content }]
      : m.content.flatMap((b) => (b.type === 'text' ? [b as SystemBlock] : []));
  const moved = body.messages.filter((m) => m.role === 'system').flatMap(blocks);
  const system: SystemBlock[] =
    typeof body.system === 'string' ? [{ type: 'text', text: body.system }] : [...(body.system ?? [])];
  return { ...body, system: [...system, ...moved], messages: body.messages.filter((m) => m.role !== 'system') };
}

const NOT_TEXT = new Set([
  'type',
  'id',
  'name',
  'signature',
  'cache_control',
  'tool_use_id',
  'media_type',
  'stop_reason',
  'stop_sequence',
  'role',
  'model',
]);

const reader: Reader<MessagesRequest, AnthropicMessage, AnthropicEvent> = {
  usage: (res) => fromAnthropicUsage(res.usage),
  chunkUsage(ev, previous) {
    if (ev.type === 'message_start') {
      const u = fromAnthropicUsage(ev.message?.usage);
      return u ? { usage: u, final: false } : previous;
    }
    if (ev.type !== 'message_delta' || !ev.usage) return previous;
    // message_delta's usage is cumulative; fields it leaves out keep message_start's values.
    const start = previous?.usage;
    const d = ev.usage as Partial<AnthropicUsage>;
    const merged = fromAnthropicUsage({
      input_tokens: d.input_tokens ?? (start ? start.prompt - start.cached - start.cacheWrite : undefined),
      cache_read_input_tokens: d.cache_read_input_tokens ?? start?.cached,
      cache_creation_input_tokens: d.cache_creation_input_tokens ?? start?.cacheWrite,
      cache_creation: (d as { cache_creation?: unknown }).cache_creation ?? {
        ephemeral_1h_input_tokens: start?.cacheWrite1h,
      },
      output_tokens: d.output_tokens,
      iterations: (d as { iterations?: unknown }).iterations,
    });
    return merged ? { usage: merged, final: true } : previous;
  },
  prompt(body) {
    const out: string[] = [];
    collect([body.system, body.messages, body.tools], NOT_TEXT, out);
    return { kind: 'text', text: out.join('\n') };
  },
  answerText(res) {
    const out: string[] = [];
    collect(res.content, NOT_TEXT, out);
    return out.join('');
  },
  chunkText(ev) {
    // A block may start with content of its own: a redacted_thinking block is all there (encrypted, billed as output);
    // tool results (web search) are input, not output.
    if (ev.type === 'content_block_start') {
      const b = ev.content_block as { text?: unknown; thinking?: unknown; data?: unknown } | undefined;
      return [b?.text, b?.thinking, b?.data].filter((x): x is string => typeof x === 'string').join('');
    }
    const d = ev.type === 'content_block_delta' ? ev.delta : undefined;
    return (d?.text ?? '') + (d?.partial_json ?? '') + (d?.thinking ?? '');
  },
};

export const messages: Operation<MessagesRequest, AnthropicMessage, AnthropicEvent> = {
  name: 'messages',
  genAi: 'chat',
  path: '/v1/messages',
  upstream: 'messages',
  forwardHeaders: ['anthropic-beta'],
  reader,
  bridge: chatBridge,
  streams: (body) => body.stream === true,
  includeUsage: () => false,
  output: (body) => ({ perChoice: body.max_tokens, choices: 1 }),
  // Pricier tiers, server tools, MCP servers, containers, compaction, 1-hour cache writes: see policy.ts.
  features: (body, model: ModelConfig, profile) => systemHoisted(anthropicBody(body, model, !!profile.longCache)),
  headers: (headers, model) => anthropicBetas(headers, model),
  present: (res, p) => ({ ...res, model: p.model, usage: p.reported ? res.usage : toAnthropicUsage(p.usage) }),
  presentChunk: (ev, { model }) =>
    ev.type === 'message_start' && ev.message ? { ...ev, message: { ...ev.message, model } } : ev,
  tail: () => [],
  framing: ANTHROPIC_SSE,
};
