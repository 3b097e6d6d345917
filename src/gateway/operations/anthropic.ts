/** What the Anthropic-shaped operations share: usage in both directions and Anthropic's SSE framing. */
import { anthropicError } from '../../errors';
import { isCount, type Usage } from '../../usage';
import { streamErrorOf } from '../router';
import type { AnthropicUsage } from '../types';
import type { Framing } from './types';

type Counts = {
  input_tokens?: unknown;
  output_tokens?: unknown;
  cache_read_input_tokens?: unknown;
  cache_creation_input_tokens?: unknown;
  cache_creation?: { ephemeral_1h_input_tokens?: unknown } | null;
};
const FIELDS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;

/** Of the cache writes, those kept for an hour (`cache_creation.ephemeral_1h_input_tokens`). */
const hourWrites = (u: Counts): number => {
  const n = u.cache_creation?.ephemeral_1h_input_tokens;
  return isCount(n) ? n : 0;
};

/**
 * Anthropic's usage → ours: cache reads and writes are prompt tokens too, priced apart, and 1-hour writes apart from
 * 5-minute ones. A request that sampled more than once (server-side compaction summarises first, then answers)
 * reports each pass in `iterations`, and its top-level numbers are the last pass's only: what Anthropic bills is the
 * sum of the passes.
 */
export function fromAnthropicUsage(
  raw: (Partial<AnthropicUsage> & { iterations?: unknown; cache_creation?: unknown }) | null | undefined,
): Usage | null {
  if (!raw || !isCount(raw.input_tokens) || !isCount(raw.output_tokens)) return null;
  const u = withIterations(raw as Counts, raw.iterations);
  const n = (k: (typeof FIELDS)[number]) => (isCount(u[k]) ? (u[k] as number) : 0);
  const read = n('cache_read_input_tokens');
  const write = n('cache_creation_input_tokens');
  const out: Usage = {
    prompt: n('input_tokens') + read + write,
    cached: read,
    cacheWrite: write,
    completion: n('output_tokens'),
    reasoning: 0,
  };
  const hour = Math.min(hourWrites(u), write);
  if (hour) out.cacheWrite1h = hour;
  return out;
}

/** The sum of every pass, when the usage lists them (never less than the top-level numbers). */
function withIterations(u: Counts, iterations: unknown): Counts {
  if (!Array.isArray(iterations) || !iterations.length) return u;
  const passes = iterations.filter((it): it is Counts => !!it && typeof it === 'object');
  const out: Counts = {};
  for (const k of FIELDS) {
    let sum = 0;
    for (const it of passes) if (isCount(it[k])) sum += it[k] as number;
    out[k] = Math.max(sum, isCount(u[k]) ? (u[k] as number) : 0);
  }
  out.cache_creation = {
    ephemeral_1h_input_tokens: Math.max(
      passes.reduce((s, it) => s + hourWrites(it), 0),
      hourWrites(u),
    ),
  };
  return out;
}

/** Ours → Anthropic's (input_tokens counts neither cache reads nor writes). */
export function toAnthropicUsage(u: Usage): AnthropicUsage {
  return {
    input_tokens: u.prompt - u.cached - u.cacheWrite,
    output_tokens: u.completion,
    cache_creation_input_tokens: u.cacheWrite,
    cache_read_input_tokens: u.cached,
  };
}

/** Anthropic's framing: `event: <type>` and `data: <event>`; no end marker; errors as an `error` event. */
export const ANTHROPIC_SSE: Framing = {
  frame: (ev) => `event: ${(ev as { type: string }).type}\ndata: ${JSON.stringify(ev)}\n\n`,
  done: '',
  error: (e: unknown) => `event: error\ndata: ${JSON.stringify(anthropicError(streamErrorOf(e)).body)}\n\n`,
};
