/**
 * What one request used, in the token classes that prices tell apart. The gateway reads it from each provider's
 * answer (or counts it), billing prices it, usage records store it. Every count is a whole number ≥ 0.
 */
export interface Usage {
  /** Every prompt token, cache reads and cache writes included (OpenAI's `prompt_tokens`). */
  prompt: number;
  /** Of the prompt: tokens read from the provider's prompt cache. */
  cached: number;
  /** Of the prompt: tokens written to the prompt cache (Anthropic bills them above the input price). */
  cacheWrite: number;
  /** Of the cache writes: those kept for an hour (Anthropic bills them at 2× input, 5-minute ones at 1.25×); 0 if absent. */
  cacheWrite1h?: number;
  /** Every generated token, reasoning included (OpenAI's `completion_tokens`). */
  completion: number;
  /** Of the completion: reasoning ("thinking") tokens. */
  reasoning: number;
}

/** A token count an upstream may be trusted with: a whole, non-negative number. */
export const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

export function usage(prompt: number, completion: number, more: Partial<Pick<Usage, 'cached' | 'cacheWrite' | 'cacheWrite1h' | 'reasoning'>> = {}): Usage {
  const u: Usage = { prompt, completion, cached: more.cached ?? 0, cacheWrite: more.cacheWrite ?? 0, reasoning: more.reasoning ?? 0 };
  if (more.cacheWrite1h) u.cacheWrite1h = more.cacheWrite1h;
  return u;
}

export const NO_USAGE: Usage = Object.freeze(usage(0, 0));
