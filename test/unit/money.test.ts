/** Money is integer micro-USD; text is parsed and printed exactly, never through a float. */
import { MICROS_PER_USD, formatUsd, parseUsd } from '../../src/money';

describe('parseUsd', () => {
  test.each([
    ['20', 20_000_000],
    ['0.5', 500_000],
    ['12.5', 12_500_000],
    ['0.000001', 1],
    ['-3.000001', -3_000_001],
    ['7.25', 7_250_000],
    ['0', 0],
    ['007.10', 7_100_000],
    [' 1.5 ', 1_500_000],
    ['9007199254.740991', Number.MAX_SAFE_INTEGER],
  ])('%j → %d micro-USD', (text, micros) => {
    expect(parseUsd(text)).toBe(micros);
  });

  test('decimal amounts add up exactly, unlike floats', () => {
    expect(0.1 + 0.2).not.toBe(0.3);
    expect(parseUsd('0.1') + parseUsd('0.2')).toBe(300_000);
    expect(parseUsd('0.1') + parseUsd('0.2')).toBe(parseUsd('0.3'));
  });

  test('numbers are read through their decimal text', () => {
    expect(parseUsd(0.1)).toBe(100_000);
    expect(parseUsd(19.99)).toBe(19_990_000);
    expect(parseUsd(-2)).toBe(-2_000_000);
  });

  test.each([
    '1.0000001',
    '1e3',
    'abc',
    '',
    '   ',
    '1.',
    '.5',
    '+5',
    '1,5',
    '1 000',
    '0x10',
    '--1',
    'NaN',
    'Infinity',
    '1.2.3',
  ])('rejects %j', (text) => {
    expect(() => parseUsd(text)).toThrow(RangeError);
  });

  test('the error names the text it could not read', () => {
    expect(() => parseUsd('1.0000001')).toThrow('not a USD amount with at most 6 decimals: "1.0000001"');
  });

  test('amounts beyond what a double holds exactly are refused', () => {
    expect(() => parseUsd('9007199254.740992')).toThrow('USD amount too large');
    expect(() => parseUsd('100000000000000000000')).toThrow(RangeError);
    expect(() => parseUsd(1e21)).toThrow(RangeError);
  });
});

describe('formatUsd', () => {
  test.each([
    [0, '0.000000'],
    [1, '0.000001'],
    [20_000_000, '20.000000'],
    [12_345_678, '12.345678'],
    [-3_000_001, '-3.000001'],
    [-1, '-0.000001'],
    [Number.MAX_SAFE_INTEGER, '9007199254.740991'],
  ])('%d → %j', (micros, text) => {
    expect(formatUsd(micros)).toBe(text);
  });

  test('round-trips with parseUsd', () => {
    for (const micros of [
      0,
      1,
      999_999,
      MICROS_PER_USD,
      1_000_001,
      300_000,
      12_500_000,
      -7_250_000,
      -1,
      123_456_789_012,
    ]) {
      expect(parseUsd(formatUsd(micros))).toBe(micros);
    }
    for (const text of ['0.000000', '0.300000', '-3.000001', '20.000000', '123456.789012']) {
      expect(formatUsd(parseUsd(text))).toBe(text);
    }
  });
});

describe('Price', () => {
  const { Price } = require('../../src/billing/prices') as typeof import('../../src/billing/prices');
  const { usage } = require('../../src/usage') as typeof import('../../src/usage');
  const price = new Price({
    input: 3_000_000,
    output: 15_000_000,
    cached_input: 300_000,
    cache_write: 3_750_000,
    cache_write_1h: 3_750_000,
  });

  test('each class of token at its price, rounded up once', () => {
    // fresh 1000 × 3 + cached 10,000 × 0.3 + written 2,000 × 3.75 + output 500 × 15 = 3,000 + 3,000 + 7,500 + 7,500 µUSD
    expect(price.cost(usage(13_000, 500, { cached: 10_000, cacheWrite: 2_000 }))).toBe(21_000);
    expect(price.cost(usage(1, 0))).toBe(3);
    expect(price.cost(usage(0, 1))).toBe(15);
    expect(
      new Price({ input: 1, output: 1, cached_input: 1, cache_write: 1, cache_write_1h: 1 }).cost(usage(1, 0)),
    ).toBe(1); // 0.000001 → 1
  });

  test('a hold prices every prompt token at the highest input price', () => {
    expect(price.worstCase(1000, 100)).toBe(3_750 + 1_500);
  });

  test('exact beyond what a double holds: the same rounding in BigInt', () => {
    const big = new Price({
      input: 999_999_999,
      output: 999_999_999,
      cached_input: 999_999_999,
      cache_write: 999_999_999,
      cache_write_1h: 999_999_999,
    });
    // 2^31 tokens × 999,999,999 = 2,147,483,645,852,516,353 ≥ 2^53: exact in BigInt, rounded up once
    expect(big.cost(usage(2 ** 31, 0))).toBe(Number((2n ** 31n * 999_999_999n + 999_999n) / 1_000_000n));
    expect(big.worstCase(2 ** 31, 2 ** 31)).toBe(Number((2n ** 32n * 999_999_999n + 999_999n) / 1_000_000n));
  });
});

describe('tiered prices', () => {
  const { Price } = require('../../src/billing/prices') as typeof import('../../src/billing/prices');
  const { usage } = require('../../src/usage') as typeof import('../../src/usage');
  // Gemini 2.5 Pro: 1.25 / 10 up to 200k prompt tokens, 2.5 / 15 above; cache reads 0.31 / 0.625
  const tier = {
    above_prompt_tokens: 200_000,
    input: 2_500_000,
    output: 15_000_000,
    cached_input: 625_000,
    cache_write: 2_500_000,
    cache_write_1h: 2_500_000,
  };
  const price = new Price({
    input: 1_250_000,
    output: 10_000_000,
    cached_input: 310_000,
    cache_write: 1_250_000,
    cache_write_1h: 1_250_000,
    tiers: [tier],
  });

  test('a usage is charged at the tier its prompt reached: 200,000 prompt tokens are not above 200,000', () => {
    expect(price.cost(usage(200_000, 1_000))).toBe(250_000 + 10_000);
    // 200,001 × 2.5 + 1,000 × 15 = 500,002.5 + 15,000 → 515,003
    expect(price.cost(usage(200_001, 1_000))).toBe(515_003);
  });

  test('cached tokens count in the prompt that reaches a tier, and are billed at its cached price', () => {
    // 1 fresh × 2.5 + 200,000 cached × 0.625 = 125,002.5 → 125,003
    expect(price.cost(usage(200_001, 0, { cached: 200_000 }))).toBe(125_003);
  });

  test('a hold prices the prompt bound at the highest tier it can reach', () => {
    expect(price.worstCase(200_000, 100)).toBe(250_000 + 1_000);
    expect(price.worstCase(200_001, 100)).toBe(501_503); // 500,002.5 + 1,500
    // 1 USD after a 250,000-token bound: 68,750 output tokens at the base, 25,000 at the tier
    expect(price.affordableOutput(250_000, 1_000_000)).toBe(25_000);
    expect(price.affordableOutput(150_000, 1_000_000)).toBe(81_250);
  });

  test('a tier priced below the one under it never lowers a hold: the dearest tier the bound reaches', () => {
    const one = {
      input: 1_000_000,
      output: 1_000_000,
      cached_input: 1_000_000,
      cache_write: 1_000_000,
      cache_write_1h: 1_000_000,
    };
    const cheaper = new Price({ ...price.p, tiers: [{ above_prompt_tokens: 200_000, ...one }] });
    expect(cheaper.cost(usage(300_000, 0))).toBe(300_000);
    expect(cheaper.worstCase(300_000, 100)).toBe(375_000 + 1_000); // the base's 1.25 / 10, not the tier's 1 / 1
    expect(cheaper.affordableOutput(300_000, 1_000_000)).toBe(62_500);
  });
});
