/**
 * A model's price as one object. Prices are micro-USD per million units, one for each usage class that has a price
 * key (usage.ts, USAGE_CLASSES); a request costs
 *   ceil(Σ units a class bills on its own × its price / 1,000,000)
 * micro-USD — fresh input × input + cache reads × cached_input + 5-minute cache writes × cache_write + 1-hour cache
 * writes × cache_write_1h + output × output + moderation requests × moderation + search units × search_unit,
 * today — computed exactly (BigInt when a double would not be) and rounded
 * up once per request, never per token or per class.
 *
 * Tiers. A price may depend on the prompt's size: the prices of the highest tier whose `above_prompt_tokens` the
 * prompt is above apply to the whole request (Gemini 2.5 Pro above 200k prompt tokens: 2× input, 1.5× output).
 * Settlement prices a usage at the tier its reported prompt reached; a hold prices the prompt bound at the dearest
 * tier that bound can reach (the highest, as prices rise with the prompt), so it covers any tier the request lands in.
 *
 * Grades. A graded class (usage.ts: generated images) costs what its grade costs — the `<size>/<quality>` of an image,
 * from the model's `price.images` table —: `graded(grades)` is the price with the class at the dearest of those grades.
 * A hold prices it at the dearest grade the request allows; settlement at the grade the upstream made.
 */
import type { ModelConfig, PriceConfig, PriceRates } from '../config';
import { USAGE_CLASSES, countOf, familyOf, type Usage, type UsageClass } from '../usage';

interface Tier {
  /** The tier applies to prompts of more tokens than this (the base: -1, every prompt). */
  above: number;
  rates: Readonly<Record<string, number | undefined>>;
  /** For each class at the top of a family: the highest price in its family, what a hold pays for each of its units. */
  top: Record<string, number>;
}

export class Price {
  private readonly tiers: Tier[];
  private readonly billedApart: readonly UsageClass[];
  /** By the index of a class in `classes`: the index of the class it is part of (-1: none); `billedApart`'s indices. */
  private readonly whole: readonly number[];
  private readonly apart: readonly number[];
  /** This price at each set of grades asked for so far (few: the subsets a request's size and quality pick). */
  private readonly byGrades = new Map<string, Price>();

  /**
   * `allowed`: the price-raising features the model allows (true: all of them). A class that needs a feature the
   * model does not allow never reaches the upstream (1-hour cache writes: their `ttl` is removed, policy.ts), so a
   * hold does not count its price. `classes`: the usage classes (tests give their own).
   */
  constructor(
    readonly p: PriceConfig,
    private readonly allowed: boolean | readonly string[] = true,
    private readonly classes: readonly UsageClass[] = USAGE_CLASSES,
  ) {
    const reaches = (c: UsageClass) =>
      !c.feature || allowed === true || (allowed !== false && allowed.includes(c.feature));
    const tier = (above: number, prices: PriceRates): Tier => {
      // by price key (a test's table may have keys of its own); a price left out is 0
      const rates = prices as Readonly<Record<string, number | undefined>>;
      const top: Record<string, number> = {};
      for (const c of classes) {
        const family = familyOf(c, classes).name;
        top[family] = Math.max(top[family] ?? 0, c.price !== null && reaches(c) ? (rates[c.price] ?? 0) : 0);
      }
      return { above, rates, top };
    };
    this.tiers = [tier(-1, p), ...(p.tiers ?? []).map((t) => tier(t.above_prompt_tokens, t))];
    this.billedApart = classes.filter((c) => c.price !== null);
    // a whole not among the classes: past the end (counted as 0, as one listed after its part)
    const wholeOf = (c: UsageClass) => {
      const at = c.partOf === null ? -1 : classes.findIndex((w) => w.name === c.partOf);
      return c.partOf !== null && at < 0 ? classes.length : at;
    };
    this.whole = classes.map(wholeOf);
    this.apart = this.billedApart.map((c) => classes.indexOf(c));
  }

  /**
   * This price with each graded class at the dearest of `grades` (a grade its table does not list costs nothing: a
   * token-priced image model counts its images without pricing them).
   */
  graded(grades: readonly string[]): Price {
    const key = grades.join(' ');
    let price = this.byGrades.get(key);
    if (!price) {
      const at: Record<string, number> = {};
      for (const [k, table] of Object.entries(this.p.grades ?? {}))
        at[k] = Math.max(0, ...grades.map((g) => table?.[g] ?? 0));
      const p: PriceConfig = { ...this.p, ...at, tiers: this.p.tiers?.map((t) => ({ ...t, ...at })) };
      this.byGrades.set(key, (price = new Price(p, this.allowed, this.classes)));
    }
    return price;
  }

  /** What a usage costs, micro-USD: at the tier its prompt reached. */
  cost(u: Usage): number {
    const rates = this.tierOf(u.prompt).rates;
    const own = this.ownCounts(u);
    return ceilMillionth(this.billedApart.map((c, i) => [own[this.apart[i]], rates[c.price!] ?? 0]));
  }

  /**
   * The most a request can cost whose prompt is at most `promptTokens` and output at most `outputTokens` (each token
   * at the highest price of its family), at the dearest tier the prompt bound reaches. `others`: bounds of the other
   * families, by the name of the class at their top (generated images: `{ images: n }`; a speech input's
   * `characters`; a moderation request, search units: usage.ts, familyBounds).
   */
  worstCase(promptTokens: number, outputTokens: number, others: Readonly<Record<string, number>> = {}): number {
    return Math.max(
      ...this.reachable(promptTokens).map((t) =>
        ceilMillionth(this.holdTerms(t, withTokens(others, promptTokens, outputTokens))),
      ),
    );
  }

  /**
   * The most output tokens `budget` micro-USD pays for once the prompt (and `others`) are paid, at every tier the
   * prompt bound reaches; -1 when not even that is paid for, null when output is free.
   */
  affordableOutput(promptTokens: number, budget: number, others: Readonly<Record<string, number>> = {}): number | null {
    let fits: number | null = null;
    for (const t of this.reachable(promptTokens)) {
      const rest = this.holdTerms(t, withTokens(others, promptTokens, 0));
      const output = t.top.completion ?? 0;
      if (output === 0) {
        if (ceilMillionth(rest) > budget) return -1;
        continue;
      }
      const left =
        BigInt(budget) * 1_000_000n - rest.reduce((n, [units, price]) => n + BigInt(units) * BigInt(price), 0n);
      if (left < 0n) return -1;
      fits = Math.min(fits ?? Infinity, Number(left / BigInt(output)));
    }
    return fits;
  }

  /** The tier a prompt of this many tokens reached. */
  private tierOf(promptTokens: number): Tier {
    return this.reachable(promptTokens).at(-1)!;
  }

  /** The tiers a prompt of at most this many tokens may reach, lowest first. */
  private reachable(promptTokens: number): Tier[] {
    return this.tiers.filter((t) => promptTokens > t.above);
  }

  /** A hold's terms: each family's bound at its highest price. */
  private holdTerms(t: Tier, bounds: Readonly<Record<string, number>>): [number, number][] {
    return Object.entries(bounds).map(([family, units]) => [units, t.top[family] ?? 0]);
  }

  /**
   * What each class bills on its own: its count (a part never counted beyond its whole), less its parts that are
   * billed apart. Fresh input is the prompt less its cache reads and writes; 5-minute writes are the writes less the
   * 1-hour ones.
   */
  private ownCounts(u: Usage): number[] {
    // arrays by class index, not Maps by name: a third of the cost, once per settled request
    const { classes, whole } = this;
    const count: number[] = [];
    for (let i = 0; i < classes.length; i++) {
      const n = countOf(u, classes[i]);
      // a whole is counted before its parts (USAGE_CLASSES' order); one listed after would count as 0
      count.push(whole[i] < 0 ? n : Math.min(n, whole[i] < i ? count[whole[i]] : 0));
    }
    const own = count.slice();
    for (const i of this.apart) if (whole[i] >= 0 && whole[i] < own.length) own[whole[i]] -= count[i];
    for (let i = 0; i < own.length; i++) own[i] = Math.max(0, own[i]);
    return own;
  }
}

/**
 * `others` with the prompt's and the output's bounds (which replace any `others` gives). Built field by field: on
 * Node 20 `{ ...others, prompt, completion }` costs ~1 µs even when `others` is empty (see fieldsOf,
 * gateway/providers/shared.ts).
 */
function withTokens(others: Readonly<Record<string, number>>, prompt: number, completion: number) {
  const bounds: Record<string, number> = { prompt, completion };
  for (const k of Object.keys(others)) if (k !== 'prompt' && k !== 'completion') bounds[k] = others[k];
  return bounds;
}

/**
 * ceil(Σ units × price / 1,000,000), exactly: in doubles while every product and partial sum stays a safe integer
 * (the usual case, cheap: a double holds such whole numbers exactly, and rounding never takes a larger one below
 * 2^53), else in BigInt.
 */
function ceilMillionth(terms: readonly (readonly [number, number])[]): number {
  let sum = 0;
  for (const [units, price] of terms) {
    const p = units * price;
    sum += p;
    if (!(p <= Number.MAX_SAFE_INTEGER && sum <= Number.MAX_SAFE_INTEGER)) {
      return Number((terms.reduce((n, [u, pr]) => n + BigInt(u) * BigInt(pr), 0n) + 999_999n) / 1_000_000n);
    }
  }
  const rest = sum % 1_000_000; // exact: sum is a whole number below 2^53
  return (sum - rest) / 1_000_000 + (rest ? 1 : 0);
}

const prices = new WeakMap<PriceConfig, Price>();

/**
 * The Price of a configured model (one object per configuration). Its holds count the classes that need a feature
 * only when the model allows it (1-hour cache writes: `cache_1h`).
 */
export function priceOf(model: Pick<ModelConfig, 'price' | 'allow'>): Price {
  let price = prices.get(model.price);
  if (!price) prices.set(model.price, (price = new Price(model.price, model.allow)));
  return price;
}
