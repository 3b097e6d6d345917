/**
 * What one request used, by usage class, and the classes themselves as one table of data (USAGE_CLASSES). The
 * gateway reads a Usage from each provider's answer (or counts it); billing prices it, the usage records store it,
 * metrics count it, the console API and the console show it, all by reading the table: a new class is one entry
 * (and a migration for its column). See README, "How to add a usage class".
 */

/** What a class is counted in (the contract's UsageClass lists the same). */
export const UNITS = ['token', 'image', 'second', 'character', 'request', 'search_unit'] as const;
export type Unit = (typeof UNITS)[number];

export interface UsageClass {
  /** Its name: the `class` label of the metrics, its key in the console API's `usage` maps and class list. */
  readonly name: string;
  /** Its key in a Usage, where the gateway puts what the provider reported. */
  readonly field: string;
  readonly unit: Unit;
  /**
   * Its price in the configuration (`models[].price.<key>`, USD per million units), or null: it is not billed apart
   * from the class it is part of (reasoning tokens are output tokens).
   */
  readonly price: string | null;
  /**
   * The class whose count includes this one's, or null. A part with a price of its own is billed at it and taken out
   * of its whole, which is billed for the rest (fresh input = prompt − cache reads − cache writes). A part with no
   * price of its own left out of the configuration costs what the providers bill for it (their multipliers of the
   * family's price: config/load.ts), else the price of its family (the class at the top of its `partOf` chain).
   */
  readonly partOf: string | null;
  /** Its usage_records column; also its field in the CLI's `usage list`, which prints the records as stored. */
  readonly column: string;
  /**
   * Also a field of its own (named `column`) in the console API's records and totals, as before the `usage` map:
   * the classes older clients read. A class added later appears in the `usage` maps only, so the contract stays.
   */
  readonly apiField?: boolean;
  /** What the console calls it ("cached": "1,024 cached"; a class at the top heads a column: "Input tokens"). */
  readonly label: string;
  /**
   * It occurs only when the model allows this feature (`models[].allow`, config FEATURES): elsewhere it never reaches
   * the upstream, and a hold leaves its price out.
   */
  readonly feature?: string;
  /**
   * Its price is a table by grade — the `<size>/<quality>` of a generated image — in USD per unit, not one number per
   * million units: what one unit costs depends on what the request asks for (an HD image costs twice a standard one).
   * A request is held at the dearest grade it allows and charged at the grade the upstream made (billing/prices.ts).
   */
  readonly graded?: boolean;
}

/** Every usage class. A part comes after its whole (billing and configuration read the table in this order). */
export const USAGE_CLASSES = [
  // Every prompt token, cache reads and writes included (OpenAI's `prompt_tokens`): the rest of it is fresh input.
  {
    name: 'prompt',
    field: 'prompt',
    unit: 'token',
    price: 'input',
    partOf: null,
    column: 'prompt_tokens',
    apiField: true,
    label: 'input',
  },
  {
    name: 'cached',
    field: 'cached',
    unit: 'token',
    price: 'cached_input',
    partOf: 'prompt',
    column: 'cached_tokens',
    apiField: true,
    label: 'cached',
  },
  {
    name: 'cache_write',
    field: 'cacheWrite',
    unit: 'token',
    price: 'cache_write',
    partOf: 'prompt',
    column: 'cache_write_tokens',
    apiField: true,
    label: 'cache write',
  },
  // Anthropic bills 1-hour writes at 2× input, 5-minute ones at 1.25×.
  {
    name: 'cache_write_1h',
    field: 'cacheWrite1h',
    unit: 'token',
    price: 'cache_write_1h',
    partOf: 'cache_write',
    column: 'cache_write_1h_tokens',
    apiField: true,
    label: '1-hour cache write',
    feature: 'cache_1h',
  },
  // Every generated token, reasoning included (OpenAI's `completion_tokens`).
  {
    name: 'completion',
    field: 'completion',
    unit: 'token',
    price: 'output',
    partOf: null,
    column: 'completion_tokens',
    apiField: true,
    label: 'output',
  },
  {
    name: 'reasoning',
    field: 'reasoning',
    unit: 'token',
    price: null,
    partOf: 'completion',
    column: 'reasoning_tokens',
    apiField: true,
    label: 'reasoning',
  },
  // Generated images (/v1/images/generations), a family of their own: a GPT image model's image tokens are output
  // tokens, priced at `output`; an image is priced by its size and quality (DALL·E), from the table `price.images`.
  {
    name: 'images',
    field: 'images',
    unit: 'image',
    price: 'images',
    partOf: null,
    column: 'images',
    label: 'generated',
    graded: true,
  },
  // The characters of the text a speech model reads aloud: OpenAI bills tts-1 per million characters of its `input`,
  // known before anything is sent (and so held and charged exactly, whatever the audio).
  {
    name: 'characters',
    field: 'characters',
    unit: 'character',
    price: 'characters',
    partOf: null,
    column: 'characters',
    label: 'input',
  },
  // Seconds of audio transcribed or translated (whisper-1: OpenAI bills $0.006 a minute, `audio_seconds: 100` per
  // million seconds). Held at the length the file itself shows (bounded by its size), charged as the upstream reports.
  {
    name: 'audio_seconds',
    field: 'audioSeconds',
    unit: 'second',
    price: 'audio_seconds',
    partOf: null,
    column: 'audio_seconds',
    label: 'audio',
  },
  // A moderation request (POST /v1/moderations). OpenAI's are free: `price.moderation` is 0 unless configured.
  {
    name: 'moderation',
    field: 'moderations',
    unit: 'request',
    price: 'moderation',
    partOf: null,
    column: 'moderation_requests',
    label: 'moderation',
  },
  // Cohere's unit of rerank: a query over up to 100 documents. Counted by the gateway from the request, so that a
  // hold covers it exactly (POST /v1/rerank).
  {
    name: 'search_unit',
    field: 'searchUnits',
    unit: 'search_unit',
    price: 'search_unit',
    partOf: null,
    column: 'search_units',
    label: 'rerank',
  },
] as const satisfies readonly UsageClass[];

type Entry = (typeof USAGE_CLASSES)[number];
export type UsageField = Entry['field'];
export type UsageColumn = Entry['column'];
/** The configuration's price keys: `input`, `output`, `cached_input`... */
export type PriceKey = NonNullable<Entry['price']>;
/**
 * The price keys of the first classes (those with fields of their own in the console API), which every set of rates
 * written out has; a later class's may be left out of one (Price reads it as 0), as a Usage may leave out its count.
 */
export type BasePriceKey = NonNullable<Extract<Entry, { apiField: true }>['price']>;
export const PRICE_KEYS = USAGE_CLASSES.flatMap((c) => (c.price === null ? [] : [c.price])) as PriceKey[];
/** The price keys whose price is a table by grade (`images`), and the others (one number per million units). */
export type GradedPriceKey = NonNullable<Extract<Entry, { graded: true }>['price']>;
export type FlatPriceKey = Exclude<PriceKey, GradedPriceKey>;
/** The price keys whose price is a table by grade (`price.images`), and those that are one number per million units. */
export const GRADED_PRICE_KEYS = USAGE_CLASSES.flatMap((c) =>
  c.price !== null && (c as UsageClass).graded ? [c.price] : [],
) as GradedPriceKey[];
export const FLAT_PRICE_KEYS = PRICE_KEYS.filter(
  (k) => !(GRADED_PRICE_KEYS as PriceKey[]).includes(k),
) as FlatPriceKey[];

/**
 * What one request used: every count a whole number ≥ 0. A class the provider did not report is 0 (the classes
 * added after the first ones may be left out).
 */
export interface Usage extends Partial<Record<UsageField, number>> {
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

/** A usage by field name (a class of a table of the tests' own may have a field the Usage type does not name). */
const fields = (u: Usage) => u as unknown as Record<string, number | undefined>;

/** A usage; the classes not given are 0 (those beyond the first five are left out when 0). */
export function usage(
  prompt: number,
  completion: number,
  more: Partial<Omit<Usage, 'prompt' | 'completion'>> = {},
): Usage {
  const u: Usage = { prompt, completion, cached: 0, cacheWrite: 0, reasoning: 0 };
  for (const [field, n] of Object.entries(more)) if (n) fields(u)[field] = n;
  return u;
}

export const NO_USAGE: Usage = Object.freeze(usage(0, 0));

/** What a usage says of one class (0 when it says nothing). */
export const countOf = (u: Usage, c: Pick<UsageClass, 'field'>): number => fields(u)[c.field] ?? 0;

/**
 * A usage as the usage_records columns that store it, added to `into` (a new object unless given). A loop, not
 * Object.fromEntries: a quarter of the cost, once per settled request.
 */
export function usageColumns<T extends object = object>(u: Usage, into = {} as T): T & Record<UsageColumn, number> {
  const out = into as Record<string, unknown>;
  for (const c of USAGE_CLASSES) out[c.column] = countOf(u, c);
  return out as T & Record<UsageColumn, number>;
}

/** Counts of some classes, by usage field (what an operation knows it uses before it is sent: operations/types.ts). */
export type Units = Partial<Record<UsageField, number>>;

/**
 * Counts by field, summed by the family they belong to (by the name of the class at its top): the bounds
 * Price.worstCase takes besides the prompt and the output.
 */
export function familyBounds(units: Units, classes: readonly UsageClass[] = USAGE_CLASSES): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [field, n] of Object.entries(units)) {
    const c = classes.find((k) => k.field === field);
    if (!c || !n) continue;
    const family = familyOf(c, classes).name;
    out[family] = (out[family] ?? 0) + n;
  }
  return out;
}

/** The class at the top of `c`'s `partOf` chain (itself when it is part of nothing). */
export function familyOf<C extends UsageClass>(c: C, classes: readonly C[]): C {
  let top = c;
  while (top.partOf !== null) top = classes.find((w) => w.name === top.partOf)!;
  return top;
}
