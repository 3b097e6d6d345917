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
  /** Every generated token, reasoning included (OpenAI's `completion_tokens`). */
  completion: number;
  /** Of the completion: reasoning ("thinking") tokens. */
  reasoning: number;
}

/** A token count an upstream may be trusted with: a whole, non-negative number. */
export const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

export function usage(prompt: number, completion: number, more: Partial<Pick<Usage, 'cached' | 'cacheWrite' | 'reasoning'>> = {}): Usage {
  return { prompt, completion, cached: more.cached ?? 0, cacheWrite: more.cacheWrite ?? 0, reasoning: more.reasoning ?? 0 };
}

export const NO_USAGE: Usage = Object.freeze(usage(0, 0));
