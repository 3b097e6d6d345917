/** What OpenAI-shaped operations share: usage in and out, the text of choices, and the `data: ...` SSE framing. */
import { isCount, type Usage } from '../../usage';
import { streamErrorBody } from '../router';
import type { OpenAIUsage } from '../types';
import type { Framing } from './types';

type Details = { cached_tokens?: unknown; cache_write_tokens?: unknown; reasoning_tokens?: unknown };

/** An upstream's usage object, if its counts can be billed (whole, non-negative); null otherwise. */
export function readUsage(u: unknown): Usage | null {
  if (!u || typeof u !== 'object') return null;
  const o = u as {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    prompt_tokens_details?: Details | null;
    completion_tokens_details?: Details | null;
  };
  if (!isCount(o.prompt_tokens) || !isCount(o.completion_tokens)) return null;
  const part = (n: unknown, of: number) => (isCount(n) ? Math.min(n, of) : 0);
  const cached = part(o.prompt_tokens_details?.cached_tokens, o.prompt_tokens);
  return {
    prompt: o.prompt_tokens,
    completion: o.completion_tokens,
    cached,
    cacheWrite: part(o.prompt_tokens_details?.cache_write_tokens, o.prompt_tokens - cached),
    reasoning: part(o.completion_tokens_details?.reasoning_tokens, o.completion_tokens),
  };
}

/** OpenAI's streams report usage once, at the end: it is the whole request's. */
export const final = (usage: Usage | null) => (usage ? { usage, final: true } : null);

/** Our usage in OpenAI's shape; cache and reasoning details when there are any. */
export function openaiUsage(u: Usage): OpenAIUsage {
  return {
    prompt_tokens: u.prompt,
    completion_tokens: u.completion,
    total_tokens: u.prompt + u.completion,
    ...(u.cached || u.cacheWrite
      ? {
          prompt_tokens_details: {
            cached_tokens: u.cached,
            ...(u.cacheWrite ? { cache_write_tokens: u.cacheWrite } : {}),
          },
        }
      : {}),
    ...(u.reasoning ? { completion_tokens_details: { reasoning_tokens: u.reasoning } } : {}),
  } as OpenAIUsage;
}

/**
 * The usage a client sees: the upstream's own object when it reported one we billed (its details included), else
 * ours. Cache writes, which travel from translating providers in a field OpenAI's usage does not have, are billed
 * but not shown: the wire format stays OpenAI's.
 */
export function shownUsage(reported: unknown, u: Usage, isReported: boolean): OpenAIUsage {
  if (!isReported || !reported || typeof reported !== 'object') return publicUsage(openaiUsage(u));
  return publicUsage(reported as OpenAIUsage);
}

function publicUsage(u: OpenAIUsage): OpenAIUsage {
  const details = u.prompt_tokens_details as (Details & object) | undefined;
  if (!details || !('cache_write_tokens' in details)) return u;
  const { cache_write_tokens: _billed, ...rest } = details;
  return { ...u, prompt_tokens_details: rest } as OpenAIUsage;
}

/** Every string under a value, except under the keys given (e.g. `role`), appended to `out`. */
export function collect(value: unknown, skip: ReadonlySet<string>, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) collect(v, skip, out);
  else if (value && typeof value === 'object') {
    for (const k in value as object) if (!skip.has(k)) collect((value as Record<string, unknown>)[k], skip, out);
  }
}

export const NOT_GENERATED = new Set(['role', 'index', 'type', 'id', 'finish_reason', 'logprobs']);

export const OPENAI_SSE: Framing = {
  frame: (chunk) => `data: ${JSON.stringify(chunk)}\n\n`,
  done: 'data: [DONE]\n\n',
  error: (e) => `data: ${JSON.stringify(streamErrorBody(e))}\n\n`,
};

/** Removes `usage` from a chunk (a client that did not ask for it gets none). */
export function withoutUsage<T extends { usage?: unknown }>(chunk: T): T {
  if (!('usage' in chunk)) return chunk;
  const { usage: _hidden, ...rest } = chunk;
  return rest as T;
}
