/** What the Anthropic-shaped operations share: usage in both directions and Anthropic's SSE framing. */
import { anthropicError } from '../../errors';
import { isCount, type Usage } from '../../usage';
import { streamErrorOf } from '../router';
import type { AnthropicUsage } from '../types';
import type { Framing } from './types';

/** Anthropic's usage → ours: cache reads and writes are prompt tokens too, priced apart. */
export function fromAnthropicUsage(u: Partial<AnthropicUsage> | null | undefined): Usage | null {
  if (!u || !isCount(u.input_tokens) || !isCount(u.output_tokens)) return null;
  const read = isCount(u.cache_read_input_tokens) ? u.cache_read_input_tokens : 0;
  const write = isCount(u.cache_creation_input_tokens) ? u.cache_creation_input_tokens : 0;
  return { prompt: u.input_tokens + read + write, cached: read, cacheWrite: write, completion: u.output_tokens, reasoning: 0 };
}

/** Ours → Anthropic's (input_tokens counts neither cache reads nor writes). */
export function toAnthropicUsage(u: Usage): AnthropicUsage {
  return { input_tokens: u.prompt - u.cached - u.cacheWrite, output_tokens: u.completion, cache_creation_input_tokens: u.cacheWrite, cache_read_input_tokens: u.cached };
}

/** Anthropic's framing: `event: <type>` and `data: <event>`; no end marker; errors as an `error` event. */
export const ANTHROPIC_SSE: Framing = {
  frame: (ev) => `event: ${(ev as { type: string }).type}\ndata: ${JSON.stringify(ev)}\n\n`,
  done: '',
  error: (e: unknown) => `event: error\ndata: ${JSON.stringify(anthropicError(streamErrorOf(e)).body)}\n\n`,
};

