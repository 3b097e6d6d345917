/**
 * A model's price as one object. Prices are micro-USD per million tokens, for each class of token; a request costs
 *   ceil((fresh input × input + cache reads × cached_input + 5-minute cache writes × cache_write
 *         + 1-hour cache writes × cache_write_1h + output × output) / 1,000,000)
 * micro-USD, computed exactly (BigInt) and rounded up once per request, never per token or per class.
 */
import type { ModelConfig, PriceConfig } from '../config';
import type { Usage } from '../usage';

export class Price {
  /** The highest of the input prices: a hold prices every prompt token at it. */
  private readonly maxInput: number;

  /** `longCache`: 1-hour cache writes may happen (the model allows them), so a hold must cover their price. */
  constructor(
    readonly p: PriceConfig,
    longCache = true,
  ) {
    this.maxInput = Math.max(p.input, p.cached_input, p.cache_write, longCache ? p.cache_write_1h : 0);
  }

  /** What a usage costs, micro-USD. */
  cost(u: Usage): number {
    const fresh = Math.max(0, u.prompt - u.cached - u.cacheWrite);
    const hour = Math.min(u.cacheWrite1h ?? 0, u.cacheWrite);
    return ceilMillionth([fresh, this.p.input], [u.cached, this.p.cached_input], [u.cacheWrite - hour, this.p.cache_write], [hour, this.p.cache_write_1h], [u.completion, this.p.output]);
  }

  /** The most a request with this prompt bound and output allowance can cost (every prompt token at the highest input price). */
  worstCase(promptTokens: number, outputTokens: number): number {
    return ceilMillionth([promptTokens, this.maxInput], [outputTokens, this.p.output]);
  }

  /** The most output tokens `budget` micro-USD pays for once the prompt is paid (null: output is free). */
  affordableOutput(promptTokens: number, budget: number): number | null {
    if (this.p.output === 0) return this.worstCase(promptTokens, 0) <= budget ? null : -1;
    const left = BigInt(budget) * 1_000_000n - BigInt(promptTokens) * BigInt(this.maxInput);
    if (left < 0n) return -1;
    return Number(left / BigInt(this.p.output));
  }
}

/** Products of whole numbers below this are exact in a double, and so is a sum of five of them. */
const EXACT = 2 ** 50;

/**
 * ceil(Σ tokens × price / 1,000,000), exactly: in doubles when every product is far below 2^53 (the usual case,
 * cheap), else in BigInt.
 */
function ceilMillionth(...terms: [number, number][]): number {
  let sum = 0;
  for (const [tokens, price] of terms) {
    const p = tokens * price;
    if (p >= EXACT) return Number((terms.reduce((n, [t, pr]) => n + BigInt(t) * BigInt(pr), 0n) + 999_999n) / 1_000_000n);
    sum += p;
  }
  const rest = sum % 1_000_000; // exact: sum is a whole number below 2^53
  return (sum - rest) / 1_000_000 + (rest ? 1 : 0);
}

const prices = new WeakMap<PriceConfig, Price>();

/**
 * The Price of a configured model (one object per configuration). Its holds count 1-hour cache writes only when the
 * model allows them: otherwise their `ttl` never reaches the upstream (policy.ts).
 */
export function priceOf(model: Pick<ModelConfig, 'price' | 'allow'>): Price {
  let price = prices.get(model.price);
  if (!price) prices.set(model.price, (price = new Price(model.price, model.allow.includes('cache_1h'))));
  return price;
}
