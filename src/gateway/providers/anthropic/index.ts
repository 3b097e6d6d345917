/**
 * Provider `anthropic`: Claude through Anthropic's Messages API (POST {base_url}/messages, API version 2023-06-01).
 * OpenAI chat requests are translated to Messages requests and the answers (whole or streamed) back to OpenAI's
 * shape (see translate.ts). Chat only: legacy completions on chat models go through chat (the gateway's bridge).
 */
import type { SseEvent } from '../../sse';
import { UpstreamError, type AnthropicEvent, type ChatChunk, type MessagesRequest } from '../../types';
import { eventObject, str } from '../http';
import { object } from '../openai';
import { fieldsOf, unixNow } from '../shared';
import { defineProvider } from '../types';
import {
  StreamTranslator,
  fromAnthropicResponse,
  toAnthropicRequest,
  type AnthropicResponse,
  type StreamEvent,
} from './translate';

export const ANTHROPIC_VERSION = '2023-06-01';

/** Each event of an Anthropic stream, as Anthropic sent it, until message_stop; an error event ends it. */
export async function* messageEvents(source: AsyncIterable<SseEvent>): AsyncGenerator<AnthropicEvent> {
  for await (const ev of source) {
    const parsed = eventObject(ev.data) as AnthropicEvent;
    if (typeof parsed.type !== 'string') (parsed as { type: string }).type = ev.event;
    if (parsed.type === 'error')
      throw new UpstreamError(
        'protocol',
        'the upstream reported an error inside the stream',
        undefined,
        str(parsed.error?.message),
      );
    yield parsed;
    if (parsed.type === 'message_stop') return;
  }
  throw new UpstreamError('protocol', 'the upstream stream ended without message_stop');
}

/** An Anthropic stream as chat chunks, until message_stop. */
export async function* chatStream(source: AsyncIterable<SseEvent>, model: string): AsyncGenerator<ChatChunk> {
  const state = new StreamTranslator(unixNow(), model);
  for await (const ev of source) {
    const parsed = eventObject(ev.data) as StreamEvent;
    if (typeof parsed.type !== 'string') (parsed as { type: string }).type = ev.event;
    yield* state.push(parsed);
    if (state.done) return;
  }
  throw new UpstreamError('protocol', 'the upstream stream ended without message_stop');
}

/** Anthropic's smallest thinking budget. */
const MIN_THINKING_BUDGET = 1024;

/**
 * A Messages request as the client wrote it, with the upstream's model id and the output allowance as max_tokens
 * (thinking tokens are output tokens, counted within it). When the allowance was lowered to what the money covers,
 * a thinking budget it cannot hold is lowered with it: Anthropic refuses a budget_tokens that is not below max_tokens.
 */
export function native(body: MessagesRequest, model: string, maxTokens: number, stream: boolean): MessagesRequest {
  const out = fieldsOf(body) as unknown as MessagesRequest; // built field by field: see fieldsOf
  out.model = model;
  out.max_tokens = maxTokens;
  out.stream = stream;
  const t = body.thinking;
  if (
    t?.type !== 'enabled' ||
    typeof t.budget_tokens !== 'number' ||
    maxTokens >= body.max_tokens ||
    t.budget_tokens < maxTokens
  )
    return out;
  return { ...out, thinking: { ...t, budget_tokens: Math.max(MIN_THINKING_BUDGET, maxTokens - 1) } };
}

export const anthropic = defineProvider({
  type: 'anthropic',
  genAi: 'anthropic',
  baseUrl: 'https://api.anthropic.com/v1',
  // Anthropic's published multipliers: cache reads 0.1× input, 5-minute writes 1.25×, 1-hour writes 2×.
  cache: { cached_input: 100, cache_write: 1250, cache_write_1h: 2000 },
  // Anthropic's errors, {"type":"error","error":{"type":"invalid_request_error","message":"..."}}, suit the default reader.
  headers: (c) => ({ 'anthropic-version': ANTHROPIC_VERSION, ...(c.api_key ? { 'x-api-key': c.api_key } : {}) }),
  operations: {
    chat: {
      path: () => '/messages',
      request: (body, ctx) => toAnthropicRequest(body, ctx.model, ctx.maxOutputTokens, ctx.stream),
      response: (json) => fromAnthropicResponse(json as AnthropicResponse, unixNow()),
      stream: (events, ctx) => chatStream(events, ctx.model),
    },
    // Anthropic's own API, natively: everything the client sent goes through (cache_control, thinking, betas).
    messages: {
      path: () => '/messages',
      request: (body, ctx) => native(body, ctx.model, ctx.maxOutputTokens, ctx.stream),
      asWritten: true,
      response: object,
      stream: (source) => messageEvents(source),
    },
    count_tokens: {
      path: () => '/messages/count_tokens',
      // What only generating reads is not a count_tokens parameter (the tier the policy pins included).
      request: (body, ctx) => {
        const {
          max_tokens: _m,
          stream: _s,
          service_tier: _t,
          ...rest
        } = body as MessagesRequest & { service_tier?: unknown };
        return { ...rest, model: ctx.model };
      },
      asWritten: true,
      response: object,
    },
  },
});
