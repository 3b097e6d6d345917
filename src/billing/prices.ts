/**
 * The cost of a request, in integer micro-USD: prices are micro-USD per million tokens, and
 *   cost = ceil((prompt_tokens × input_price + completion_tokens × output_price) / 1,000,000)
 * computed exactly (BigInt) and rounded up once per request, never per token.
 */
import type { ModelConfig } from '../config';

export function costMicros(price: ModelConfig['price'], promptTokens: number, completionTokens: number): number {
  const numerator = BigInt(promptTokens) * BigInt(price.input) + BigInt(completionTokens) * BigInt(price.output);
  const cost = (numerator + 999_999n) / 1_000_000n;
  return Number(cost);
}

/** The most output tokens that `budgetMicros` pays for once the prompt is paid (null: unlimited, free output). */
export function affordableOutput(price: ModelConfig['price'], promptTokens: number, budgetMicros: number): number | null {
  if (price.output === 0) return costMicros(price, promptTokens, 0) <= budgetMicros ? null : -1;
  const left = BigInt(budgetMicros) * 1_000_000n - BigInt(promptTokens) * BigInt(price.input);
  if (left < 0n) return -1;
  return Number(left / BigInt(price.output));
}
