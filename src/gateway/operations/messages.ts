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
import type { Operation, Reader } from './types';

const NOT_TEXT = new Set(['type', 'id', 'name', 'signature', 'cache_control', 'tool_use_id', 'media_type', 'stop_reason', 'stop_sequence', 'role', 'model']);

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
      output_tokens: d.output_tokens,
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
    const d = ev.type === 'content_block_delta' ? ev.delta : undefined;
    return (d?.text ?? '') + (d?.partial_json ?? '') + (d?.thinking ?? '');
  },
};

/**
 * Anthropic's server tools: they run at Anthropic and bill beyond the request's tokens — web search per search, code
 * execution per container hour, MCP toolsets whatever the server returns — and what they fetch or compute enters the
 * prompt unseen by the hold. Served only on models that allow `web_search`, as are `mcp_servers`.
 */
const pricierTool = (t: { type?: string }) => typeof t.type === 'string' && /^(web_search|web_fetch|code_execution|mcp_toolset)/.test(t.type);

function withoutServerTools(body: MessagesRequest): MessagesRequest {
  const { mcp_servers: _remote, ...rest } = body as MessagesRequest & { mcp_servers?: unknown };
  return { ...rest, ...(body.tools ? { tools: body.tools.filter((t) => !pricierTool(t)) } : {}) } as MessagesRequest;
}

/** Betas that raise Anthropic's token prices: the 1M-token context bills prompts over 200k tokens at a premium. */
const LONG_CONTEXT_BETA = /^context-1m-/;

/** anthropic-beta without the betas the model's prices do not cover (`long_context` allows the 1M context). */
function betas(headers: Record<string, string>, model: ModelConfig): Record<string, string> {
  const beta = headers['anthropic-beta'];
  if (!beta || model.allow.includes('long_context')) return headers;
  const kept = beta.split(',').map((b) => b.trim()).filter((b) => b && !LONG_CONTEXT_BETA.test(b));
  const { 'anthropic-beta': _all, ...rest } = headers;
  return kept.length ? { ...rest, 'anthropic-beta': kept.join(',') } : rest;
}

export const messages: Operation<MessagesRequest, AnthropicMessage, AnthropicEvent> = {
  name: 'messages',
  path: '/v1/messages',
  serves: ['chat'],
  upstream: 'messages',
  forwardHeaders: ['anthropic-beta'],
  reader,
  bridge: chatBridge,
  streams: (body) => body.stream === true,
  includeUsage: () => false,
  output: (body) => ({ perChoice: body.max_tokens, choices: 1 }),
  headers: betas,
  features(body, model: ModelConfig) {
    let out = body;
    if (!model.allow.includes('priority')) {
      // `auto` serves from Anthropic's priority capacity when the organisation has it, at priority prices; fast mode
      // (`speed: fast`) bills a multiple of the standard prices. Both are served at the standard tier and speed.
      const { speed: _fast, ...rest } = out as MessagesRequest & { speed?: unknown };
      out = { ...(rest as MessagesRequest), service_tier: 'standard_only' };
    }
    const serverTools = out.tools?.some(pricierTool) || (out as { mcp_servers?: unknown }).mcp_servers != null;
    if (serverTools && !model.allow.includes('web_search')) out = withoutServerTools(out);
    return out;
  },
  present: (res, p) => ({ ...res, model: p.model, usage: p.reported ? res.usage : toAnthropicUsage(p.usage) }),
  presentChunk: (ev, { model }) => (ev.type === 'message_start' && ev.message ? { ...ev, message: { ...ev.message, model } } : ev),
  tail: () => [],
  framing: ANTHROPIC_SSE,
};
