/**
 * The usage classes as one table (src/usage.ts): the table is well formed and agrees with the configuration, the
 * contract and the database; Price reads it, so a class of another unit, or a new part of the prompt, is priced by
 * adding an entry (here to a table of the test's own).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { Price } from '../../src/billing/prices';
import { FEATURES, type PriceConfig } from '../../src/config';
import { connect } from '../../src/db';
import { PRICE_KEYS, UNITS, USAGE_CLASSES, usage, usageColumns, type Usage, type UsageClass } from '../../src/usage';

describe('the table', () => {
  const names = USAGE_CLASSES.map((c) => c.name);

  test('names, fields, columns and price keys are each unique', () => {
    for (const key of ['name', 'field', 'column'] as const)
      expect(new Set(USAGE_CLASSES.map((c) => c[key])).size).toBe(USAGE_CLASSES.length);
    expect(new Set(PRICE_KEYS).size).toBe(PRICE_KEYS.length);
  });

  test('a part names a class before it (billing and the configuration read a whole before its parts)', () => {
    const misplaced = USAGE_CLASSES.filter(
      (c, i) => c.partOf !== null && !(names.indexOf(c.partOf) >= 0 && names.indexOf(c.partOf) < i),
    );
    expect(misplaced).toEqual([]);
  });

  test('a feature a class needs is one the configuration knows', () => {
    for (const c of USAGE_CLASSES as readonly UsageClass[]) if (c.feature) expect(FEATURES).toContain(c.feature);
  });

  test("the contract's units are the table's", () => {
    const contract = parse(fs.readFileSync(path.join(__dirname, '../../openapi/openapi.yaml'), 'utf8'));
    expect(contract.components.schemas.UsageClass.properties.unit.enum).toEqual([...UNITS]);
  });

  test('every class has its usage_records column (a new class needs a migration)', async () => {
    const db = connect(process.env.DATABASE_URL);
    try {
      const columns = Object.keys(await db('usage_records').columnInfo());
      expect(columns).toEqual(expect.arrayContaining(USAGE_CLASSES.map((c) => c.column)));
    } finally {
      await db.destroy();
    }
  });

  test('a usage is stored as one column a class, 0 for a class it does not report', () => {
    expect(usageColumns(usage(100, 20, { cached: 30, reasoning: 5 }))).toEqual({
      prompt_tokens: 100,
      cached_tokens: 30,
      cache_write_tokens: 0,
      cache_write_1h_tokens: 0,
      completion_tokens: 20,
      reasoning_tokens: 5,
      images: 0,
      characters: 0,
      audio_seconds: 0,
      moderation_requests: 0,
      search_units: 0,
    });
  });
});

describe('Price reads the table', () => {
  const rates = (r: Record<string, number>) => r as unknown as PriceConfig;
  const used = (u: Usage, more: Record<string, number>) => ({ ...u, ...more }) as Usage;

  test('a class counted in seconds, priced per million seconds, apart from the tokens', () => {
    const table: UsageClass[] = [
      ...USAGE_CLASSES,
      {
        name: 'audio_seconds',
        field: 'audioSeconds',
        unit: 'second',
        price: 'audio_second',
        partOf: null,
        column: 'audio_seconds',
        label: 'transcribed',
      },
    ];
    // 0.0001 USD a second: 100 USD per million seconds
    const price = new Price(
      rates({
        input: 1_000_000,
        output: 4_000_000,
        cached_input: 1_000_000,
        cache_write: 1_000_000,
        cache_write_1h: 1_000_000,
        audio_second: 100_000_000,
      }),
      true,
      table,
    );
    // 100 prompt tokens × 1 + 600 seconds × 100 µUSD
    expect(price.cost(used(usage(100, 0), { audioSeconds: 600 }))).toBe(100 + 60_000);
    // a hold counts the seconds' bound like any family's
    expect(price.worstCase(100, 10, { audio_seconds: 600 })).toBe(100 + 40 + 60_000);
    expect(price.affordableOutput(100, 60_100 + 8, { audio_seconds: 600 })).toBe(2);
  });

  test('generated images: priced by grade (size/quality), held at the dearest allowed, charged at the one made', () => {
    // as config/load.ts reads `price.images` in USD per image: micro-USD per million images
    const perImage = (usd: number) => usd * 1_000_000 * 1_000_000;
    const grades = {
      '1024x1024/standard': perImage(0.04),
      '1024x1024/hd': perImage(0.08),
      '1792x1024/hd': perImage(0.12),
    };
    const price = new Price({ ...rates({ input: 0, output: 0 }), images: perImage(0.12), grades: { images: grades } });
    const three = used(usage(0, 0), { images: 3 });
    expect(price.graded(['1024x1024/standard']).cost(three)).toBe(120_000);
    expect(price.graded(['1024x1024/standard', '1024x1024/hd']).worstCase(50, 0, { images: 10 })).toBe(800_000);
    expect(price.worstCase(50, 0, { images: 10 })).toBe(1_200_000); // no grade known: the dearest
    expect(price.graded(['512x512/standard']).cost(three)).toBe(0); // a grade it is not priced at costs nothing
    expect(price.graded(['1024x1024/hd'])).toBe(price.graded(['1024x1024/hd'])); // made once
  });

  test('a token-priced image model: text in at input, image tokens out at output, images counted apart', () => {
    const price = new Price(rates({ input: 5_000_000, output: 40_000_000 }));
    // 9 × 5 + 1,056 × 40 = 45 + 42,240 µUSD; the images have no price of their own
    expect(price.graded(['1024x1024/medium']).cost(used(usage(9, 1_056), { images: 1 }))).toBe(42_285);
  });

  test('a new part of the prompt is taken out of fresh input and billed at its own price; a hold counts it', () => {
    const table: UsageClass[] = [
      ...USAGE_CLASSES,
      {
        name: 'audio',
        field: 'audio',
        unit: 'token',
        price: 'audio_input',
        partOf: 'prompt',
        column: 'audio_tokens',
        label: 'audio',
      },
    ];
    const price = new Price(
      rates({
        input: 2_500_000,
        output: 10_000_000,
        cached_input: 1_250_000,
        cache_write: 2_500_000,
        cache_write_1h: 2_500_000,
        audio_input: 40_000_000,
      }),
      true,
      table,
    );
    // fresh 500 × 2.5 + cached 200 × 1.25 + audio 300 × 40 + output 10 × 10 = 1,250 + 250 + 12,000 + 100 µUSD
    expect(price.cost(used(usage(1_000, 10, { cached: 200 }), { audio: 300 }))).toBe(13_600);
    expect(price.worstCase(1_000, 10)).toBe(1_000 * 40 + 10 * 10);
  });

  test('exact however many classes: a sum past 2^53 falls back to BigInt', () => {
    // Nine classes, each product below 2^50 (each exact in a double) but their sum is not: doubles would lose the µUSD.
    const table: UsageClass[] = Array.from({ length: 9 }, (_, i) => ({
      name: `c${i}`,
      field: `f${i}`,
      unit: 'token',
      price: `k${i}`,
      partOf: null,
      column: `c${i}`,
      label: `c${i}`,
    }));
    const price = new Price(rates(Object.fromEntries(table.map((c) => [c.price, 1]))), true, table);
    const counts = [...Array(8).fill(1_125_899_906_842_623), 1_125_899_906_259_017];
    const u = { ...usage(0, 0), ...Object.fromEntries(counts.map((n, i) => [`f${i}`, n])) } as Usage;
    const exact = (counts.reduce((s, n) => s + BigInt(n), 0n) + 999_999n) / 1_000_000n;
    expect(price.cost(u)).toBe(Number(exact)); // 10,133,099,162; summed in doubles: 10,133,099,161
  });
});
