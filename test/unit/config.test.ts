/** The YAML configuration: defaults, ${ENV} expansion, and errors that point at the file, line, column and setting. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/config';
import { MODEL_KINDS } from '../../src/contract';
import { loadConfig, parseConfig } from '../../src/services/app';
import { FLAT_PRICE_KEYS } from '../../src/usage';

/** The message of the ConfigError that parsing `text` throws (fails the test if it parses, or throws something else). */
function configError(text: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    parseConfig(text, 'gw.yaml', env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError, but the configuration was accepted');
}

describe('a valid configuration', () => {
  const text = `
server:
  max_body_bytes: 2048
providers:
  up:
    type: openai
    base_url: https://api.example.com/v1///
    api_key: sk-upstream
    timeouts: { first_byte_ms: 5000 }
  local:
    type: mock
models:
  - id: gpt-4o-mini
    kind: chat
    routes:
      - provider: up
        model: gpt-4o-mini-2024-07-18
      - provider: local
  - id: text-embedding-3-small
    kind: embedding
    owned_by: openai
    created: 1700000000
    price: { input: 0.02 }
    max_output_tokens: 1
    routes: [ { provider: local } ]
`;

  test('providers get their defaults, and the base_url loses its trailing slashes', () => {
    const c = parseConfig(text, 'gw.yaml', {});
    expect(c.file).toBe('gw.yaml');
    expect(c.server.max_body_bytes).toBe(2048);
    expect(c.providers.up).toEqual({
      name: 'up',
      type: 'openai',
      base_url: 'https://api.example.com/v1',
      api_key: 'sk-upstream',
      headers: {},
      max_connections: 64,
      timeouts: { connect_ms: 10_000, first_byte_ms: 5000, idle_ms: 60_000, total_ms: 600_000 },
      latency_ms: 0,
      settings: {},
    });
    expect(c.providers.local.timeouts).toEqual({
      connect_ms: 10_000,
      first_byte_ms: 120_000,
      idle_ms: 60_000,
      total_ms: 600_000,
    });
    expect(c.providers.local.base_url).toBeUndefined();
  });

  test('models get their defaults: owned_by from the first route, route model from the model id', () => {
    const [chat, embedding] = parseConfig(text, 'gw.yaml', {}).models;
    expect(chat).toMatchObject({
      id: 'gpt-4o-mini',
      kind: 'chat',
      owned_by: 'up',
      created: 1_735_689_600,
      price: { input: 0, output: 0 },
      max_output_tokens: 4096,
      routes: [
        { provider: 'up', model: 'gpt-4o-mini-2024-07-18' },
        { provider: 'local', model: 'gpt-4o-mini' },
      ],
    });
    expect(embedding).toMatchObject({
      id: 'text-embedding-3-small',
      kind: 'embedding',
      owned_by: 'openai',
      created: 1_700_000_000,
      price: { input: 20_000, output: 0 }, // micro-USD per million tokens
      max_output_tokens: 1,
      routes: [{ provider: 'local', model: 'text-embedding-3-small' }],
    });
  });

  test('server settings are optional', () => {
    const c = parseConfig(
      'providers: { m: { type: mock } }\nmodels: [ { id: a, kind: completion, routes: [ { provider: m } ] } ]\n',
    );
    expect(c.file).toBeNull();
    expect(c.server.max_body_bytes).toBe(10 * 1024 * 1024);
    expect(c.server).toMatchObject({ shutdown_grace_ms: 30_000, shutdown_delay_ms: 0 });
  });
});

describe('cache prices', () => {
  const yaml = (models: string) => `
providers:
  an: { type: anthropic }
  oa: { type: openai, base_url: "https://api.example.com/v1" }
models:
${models}`;

  test("left out, a cache class is priced at the provider's multiplier of input, and start-up is told", () => {
    const c = parseConfig(
      yaml('  - { id: claude, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: an } ] }'),
      null,
      {},
    );
    expect(c.models[0].price).toEqual({
      input: 3_000_000,
      output: 15_000_000,
      cached_input: 300_000,
      cache_write: 3_750_000,
      cache_write_1h: 6_000_000,
    });
    expect(c.priceNotices).toEqual([
      {
        model: 'claude',
        class: 'cached_input',
        price: 300_000,
        kind: 'derived',
        provider: 'anthropic',
        billed: 300_000,
      },
      {
        model: 'claude',
        class: 'cache_write',
        price: 3_750_000,
        kind: 'derived',
        provider: 'anthropic',
        billed: 3_750_000,
      },
      {
        model: 'claude',
        class: 'cache_write_1h',
        price: 6_000_000,
        kind: 'derived',
        provider: 'anthropic',
        billed: 6_000_000,
      },
    ]);
  });

  test('a provider that bills no class apart prices it at input; with several routes the dearest bill wins', () => {
    const c = parseConfig(
      yaml(`  - { id: gpt, kind: chat, price: { input: 1, output: 4 }, routes: [ { provider: oa } ] }
  - { id: both, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: oa }, { provider: an } ] }`),
      null,
      {},
    );
    expect(c.models[0].price).toEqual({
      input: 1_000_000,
      output: 4_000_000,
      cached_input: 1_000_000,
      cache_write: 1_000_000,
      cache_write_1h: 1_000_000,
    });
    // reads: OpenAI's route may bill them at input; writes: Anthropic's bills more than input
    expect(c.models[1].price).toMatchObject({
      cached_input: 3_000_000,
      cache_write: 3_750_000,
      cache_write_1h: 6_000_000,
    });
    expect(c.priceNotices.map((n) => `${n.model} ${n.class} ${n.kind}`)).toEqual([
      'both cache_write derived',
      'both cache_write_1h derived',
    ]);
  });

  test('a configured price below what the provider bills is kept, and noted as sold at a loss', () => {
    const c = parseConfig(
      yaml(
        '  - { id: cheap, kind: chat, price: { input: 3, output: 15, cache_write: 3, cached_input: 0.3 }, routes: [ { provider: an } ] }',
      ),
      null,
      {},
    );
    expect(c.models[0].price).toMatchObject({
      cache_write: 3_000_000,
      cached_input: 300_000,
      cache_write_1h: 6_000_000,
    });
    expect(c.priceNotices.filter((n) => n.kind === 'below')).toEqual([
      {
        model: 'cheap',
        class: 'cache_write',
        price: 3_000_000,
        kind: 'below',
        provider: 'anthropic',
        billed: 3_750_000,
      },
    ]);
  });
});

describe('tiered prices', () => {
  const yaml = (price: string, provider = 'an') => `
providers:
  an: { type: anthropic }
  g: { type: gemini }
models:
  - { id: m, kind: chat, price: ${price}, routes: [ { provider: ${provider} } ] }`;

  test('a tier sets the prices above a prompt size; cache prices left out come from its own input', () => {
    // Gemini 2.5 Pro: 1.25 / 10 up to 200k prompt tokens, 2.5 / 15 above (cache reads 0.31 and 0.625)
    const c = parseConfig(
      yaml(
        '{ input: 1.25, output: 10, cached_input: 0.31, tiers: [ { above_prompt_tokens: 200000, input: 2.5, output: 15, cached_input: 0.625 } ] }',
        'g',
      ),
      null,
      {},
    );
    expect(c.models[0].price).toEqual({
      input: 1_250_000,
      output: 10_000_000,
      cached_input: 310_000,
      cache_write: 1_250_000,
      cache_write_1h: 1_250_000,
      tiers: [
        {
          above_prompt_tokens: 200_000,
          input: 2_500_000,
          output: 15_000_000,
          cached_input: 625_000,
          cache_write: 2_500_000,
          cache_write_1h: 2_500_000,
        },
      ],
    });
  });

  test("Claude's long context: the tier's cache prices are Anthropic's multipliers of the tier's input, and start-up says so", () => {
    const c = parseConfig(
      yaml('{ input: 3, output: 15, tiers: [ { above_prompt_tokens: 200000, input: 6, output: 22.5 } ] }'),
      null,
      {},
    );
    expect(c.models[0].price.tiers).toEqual([
      {
        above_prompt_tokens: 200_000,
        input: 6_000_000,
        output: 22_500_000,
        cached_input: 600_000,
        cache_write: 7_500_000,
        cache_write_1h: 12_000_000,
      },
    ]);
    expect(c.priceNotices.filter((n) => n.tier !== undefined).map((n) => `${n.class} ${n.tier} ${n.price}`)).toEqual([
      'cached_input 200000 600000',
      'cache_write 200000 7500000',
      'cache_write_1h 200000 12000000',
    ]);
  });

  test('input and output a tier leaves out are those of the tier below it', () => {
    const c = parseConfig(
      yaml(
        '{ input: 1, output: 2, tiers: [ { above_prompt_tokens: 1000, input: 3 }, { above_prompt_tokens: 2000, output: 5 } ] }',
        'g',
      ),
      null,
      {},
    );
    expect(c.models[0].price.tiers).toEqual([
      expect.objectContaining({ above_prompt_tokens: 1000, input: 3_000_000, output: 2_000_000 }),
      expect.objectContaining({ above_prompt_tokens: 2000, input: 3_000_000, output: 5_000_000 }),
    ]);
  });

  test('without tiers (or with none) a price has no tiers', () => {
    expect(parseConfig(yaml('{ input: 1, output: 2, tiers: [] }', 'g'), null, {}).models[0].price).not.toHaveProperty(
      'tiers',
    );
  });

  test.each([
    [
      '{ input: 1, tiers: [ { above_prompt_tokens: 2000, input: 2 }, { above_prompt_tokens: 1000, input: 3 } ] }',
      /gw\.yaml:6:\d+: models\[0\]\.price\.tiers\[1\]\.above_prompt_tokens: tiers must be in ascending order of above_prompt_tokens: 1000 is not above 2000/,
    ],
    [
      '{ input: 1, tiers: [ { above_prompt_tokens: 1000, input: 2 }, { above_prompt_tokens: 1000, input: 3 } ] }',
      /tiers\[1\]\.above_prompt_tokens: tiers must be in ascending order/,
    ],
    [
      '{ input: 1, tiers: [ { above_prompt_tokens: 1000 } ] }',
      // every price key of the usage classes but the graded ones (per image, not per prompt size)
      `models[0].price.tiers[0]: a tier must set at least one price (${FLAT_PRICE_KEYS.join(', ')})`,
    ],
    [
      '{ input: 1, tiers: [ { input: 2 } ] }',
      /models\[0\]\.price\.tiers\[0\]: missing required setting 'above_prompt_tokens'/,
    ],
    ['{ input: 1, tiers: [ { above_prompt_tokens: 0, input: 2 } ] }', /tiers\[0\]\.above_prompt_tokens: must be >= 1/],
    [
      '{ input: 1, tiers: [ { above_prompt_tokens: 1.5, input: 2 } ] }',
      /tiers\[0\]\.above_prompt_tokens: must be integer/,
    ],
    ['{ input: 1, tiers: [ { above_prompt_tokens: 100, inputs: 2 } ] }', /tiers\[0\]: unknown setting 'inputs'/],
    [
      '{ input: 1, tiers: [ { above_prompt_tokens: 100, input: 0.0000001 } ] }',
      /tiers\[0\]\.input: must be a USD amount with at most 6 decimals/,
    ],
  ])('%s is refused', (price, message) => {
    expect(configError(yaml(price))).toMatch(message);
  });
});

describe('image models', () => {
  const yaml = (model: string, kind = 'image') => `
providers:
  up: { type: openai, base_url: https://api.example.com/v1 }
models:
  - { id: m, kind: ${kind}, ${model}, routes: [ { provider: up } ] }`;

  test('price.images: USD per image by size/quality, read as micro-USD per million images; without a grade, the dearest', () => {
    const c = parseConfig(yaml('price: { images: { 1024x1024/standard: 0.04, 1792x1024/hd: 0.12 } }'), null, {});
    expect(c.models[0].price).toMatchObject({
      input: 0,
      output: 0,
      images: 120_000_000_000,
      grades: { images: { '1024x1024/standard': 40_000_000_000, '1792x1024/hd': 120_000_000_000 } },
    });
  });

  test('token-priced: the most output tokens an image of each size and quality costs', () => {
    const c = parseConfig(
      yaml('price: { input: 5, output: 40 }, image_output_tokens: { 1024x1024/low: 272, 1536x1024/high: 6240 }'),
      null,
      {},
    );
    expect(c.models[0].image_output_tokens).toEqual({ '1024x1024/low': 272, '1536x1024/high': 6240 });
    expect(c.models[0].price).not.toHaveProperty('images');
  });

  test.each([
    ['price: { input: 5 }', /models\[0\]\.price: an image model needs price\.images/],
    ['price: { output: 40, images: { 1024x1024/low: 0.01 } }', /image_output_tokens: an image model whose output/],
    [
      'price: { images: { 1024x1024/low: 0.01 } }, image_output_tokens: { 1024x1024/high: 4160 }',
      /must list the same sizes and qualities as price\.images/,
    ],
    ['price: { images: { 1024/low: 0.01 } }', /price\.images: must match pattern/],
    ['price: { images: { 1024x1024/low: 0.0000001 } }', /price\.images\.1024x1024\/low: must be a USD amount/],
    ['price: { images: { 1024x1024/low: 0.01 } }', /only image models \(kind: image\) have prices per image/, 'chat'],
    ['image_output_tokens: { 1024x1024/low: 272 }', /only image models \(kind: image\) have it/, 'chat'],
  ])('%s (%#) is refused', (model, message, kind = 'image') => {
    expect(configError(yaml(model, kind as string))).toMatch(message);
  });
});

describe('environment variables', () => {
  const text = `
providers:
  up:
    type: openai
    base_url: "\${UP_URL:-http://127.0.0.1:11434/v1}"
    api_key: "\${UP_KEY}"
    headers: { X-Team: "team-\${TEAM:-none}-\${REGION:-eu}" }
models:
  - { id: a, kind: chat, routes: [ { provider: up } ] }
`;

  test('${VAR} is replaced, and ${VAR:-default} falls back when the variable is unset or empty', () => {
    const c = parseConfig(text, 'gw.yaml', { UP_KEY: 'sk-from-env', TEAM: 'blue', REGION: '' });
    expect(c.providers.up.api_key).toBe('sk-from-env');
    expect(c.providers.up.base_url).toBe('http://127.0.0.1:11434/v1');
    expect(c.providers.up.headers).toEqual({ 'X-Team': 'team-blue-eu' });
  });

  test('a set variable wins over the default', () => {
    const c = parseConfig(text, 'gw.yaml', { UP_KEY: 'k', UP_URL: 'https://llm.internal/v1/' });
    expect(c.providers.up.base_url).toBe('https://llm.internal/v1');
  });

  test('the expanded value is what gets validated', () => {
    const msg = configError(text, { UP_KEY: 'k', UP_URL: 'llm.internal' });
    expect(msg).toBe('gw.yaml:5:15: providers.up.base_url: must match pattern "^https?://"');
  });

  test('an unset variable without a default fails, naming the place and the variable', () => {
    expect(configError(text, {})).toBe('gw.yaml:6:14: providers.up.api_key: environment variable UP_KEY is not set');
    expect(configError(text, { UP_KEY: '' })).toContain('environment variable UP_KEY is not set');
  });

  test('a variable name in a comment or a key is left alone', () => {
    const c = parseConfig(
      '# ${NOT_SET}\nproviders: { m: { type: mock, headers: { "${X}": "v-${X}" } } }\nmodels: [ { id: a, kind: chat, routes: [ { provider: m } ] } ]\n',
      null,
      { X: 'x' },
    );
    expect(c.providers.m.headers).toEqual({ '${X}': 'v-x' });
  });
});

describe('a broken configuration names the file, line, column and setting', () => {
  test('an unknown provider in a route', () => {
    const text = [
      'providers:', //                                   1
      '  mock: { type: mock }', //                       2
      'models:', //                                      3
      '  - { id: a, kind: chat, routes: [ { provider: mock } ] }', // 4
      '  - id: b', //                                    5
      '    kind: chat', //                               6
      '    routes:', //                                  7
      '      - provider: x', //                          8
    ].join('\n');
    expect(configError(text)).toBe("gw.yaml:8:19: models[1].routes[0].provider: unknown provider 'x'");
  });

  test('a bad model kind', () => {
    const text = `providers:
  mock: { type: mock }
models:
  - id: a
    kind: chat
    routes: [ { provider: mock } ]
  - id: b
    kind: chatt
    routes: [ { provider: mock } ]
`;
    expect(configError(text)).toBe(`gw.yaml:8:11: models[1].kind: must be one of ${MODEL_KINDS.join(', ')}`);
  });

  test('a bad provider type', () => {
    const text =
      'providers:\n  mock: { type: mock }\n  other: { type: cohere }\nmodels: [ { id: a, kind: chat, routes: [ { provider: mock } ] } ]\n';
    expect(configError(text)).toMatch(/^gw\.yaml:3:18: providers\.other\.type: must be one of openai, (\w+, )*mock$/);
  });

  test('an openai provider without base_url', () => {
    const text = `providers:
  mock: { type: mock }
  up:
    type: openai
    api_key: sk-x
models:
  - { id: a, kind: chat, routes: [ { provider: mock } ] }
`;
    expect(configError(text)).toBe("gw.yaml:4:5: providers.up: missing required setting 'base_url'");
  });

  test("a vertex provider needs its project, location and credentials; its address is the location's", () => {
    const text = (settings: string) =>
      `providers:\n  vx: { type: vertex, ${settings} }\nmodels: [ { id: a, kind: chat, routes: [ { provider: vx, model: gemini-2.5-flash } ] } ]\n`;
    expect(configError(text('project: p, credentials: /k.json'))).toBe(
      "gw.yaml:2:7: providers.vx: missing required setting 'location'",
    );
    expect(configError(text('location: us-east5, credentials: /k.json'))).toMatch(/missing required setting 'project'/);
    expect(configError(text('project: p, location: "us/../x", credentials: /k.json'))).toMatch(
      /providers\.vx\.location: must match pattern/,
    );
    const at = (settings: string) => parseConfig(text(settings), 'gw.yaml', {}).providers.vx.base_url;
    expect(at('project: p, location: us-east5, credentials: /k.json')).toBe(
      'https://us-east5-aiplatform.googleapis.com',
    );
    expect(at('project: p, location: global, credentials: /k.json')).toBe('https://aiplatform.googleapis.com');
    expect(at('project: p, location: global, credentials: /k.json, base_url: "http://127.0.0.1:1/"')).toBe(
      'http://127.0.0.1:1',
    );
    // Another type's settings are refused on it, and its own on another type.
    expect(configError(text('project: p, location: l, credentials: /k.json, api_version: 2024-10-21'))).toMatch(
      /unknown setting 'api_version' for a provider of type vertex/,
    );
  });

  test('a bedrock provider needs a region, its own or AWS_REGION: the error names the provider', () => {
    const text = (settings: string) =>
      `providers:\n  aws: { type: bedrock${settings} }\nmodels: [ { id: a, kind: chat, routes: [ { provider: aws, model: m } ] } ]\n`;
    const saved = { AWS_REGION: process.env.AWS_REGION, AWS_DEFAULT_REGION: process.env.AWS_DEFAULT_REGION };
    try {
      delete process.env.AWS_REGION;
      delete process.env.AWS_DEFAULT_REGION;
      const missing =
        'gw.yaml:2:8: providers.aws: a bedrock provider needs `region` (or AWS_REGION in the environment)';
      expect(configError(text(''))).toBe(missing);
      // Its signatures need the region even when base_url says where to send them (a VPC endpoint).
      expect(configError(text(', base_url: "http://127.0.0.1:1"'))).toBe(missing);
      const at = (settings: string) => parseConfig(text(settings), 'gw.yaml', {}).providers.aws.base_url;
      expect(at(', region: eu-west-1')).toBe('https://bedrock-runtime.eu-west-1.amazonaws.com');
      process.env.AWS_REGION = 'us-east-2';
      expect(at('')).toBe('https://bedrock-runtime.us-east-2.amazonaws.com');
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  });

  test('a mock provider needs no base_url', () => {
    expect(() =>
      parseConfig('providers: { m: { type: mock } }\nmodels: [ { id: a, kind: chat, routes: [ { provider: m } ] } ]\n'),
    ).not.toThrow();
  });

  test('a model without routes', () => {
    const text = 'providers:\n  mock: { type: mock }\nmodels:\n  - id: a\n    kind: chat\n';
    expect(configError(text)).toBe("gw.yaml:4:5: models[0]: missing required setting 'routes'");
  });

  test('an unknown setting is reported on its own line', () => {
    const text = `providers:
  mock:
    type: mock
    latency_ms: 5
    latncy: 5
models:
  - { id: a, kind: chat, routes: [ { provider: mock } ] }
`;
    expect(configError(text)).toBe("gw.yaml:5:5: providers.mock: unknown setting 'latncy'");
  });

  test('an unknown top-level setting', () => {
    const text =
      'providers:\n  mock: { type: mock }\nmodels:\n  - { id: a, kind: chat, routes: [ { provider: mock } ] }\nmodel_aliases: {}\n';
    expect(configError(text)).toBe("gw.yaml:5:1: unknown setting 'model_aliases'");
  });

  test('an unknown setting inside a flow mapping', () => {
    const text =
      'providers:\n  mock: { type: mock }\nmodels:\n  - { id: a, kind: chat, routes: [ { provider: mock, region: eu } ] }\n';
    expect(configError(text)).toBe("gw.yaml:4:54: models[0].routes[0]: unknown setting 'region'");
  });

  test('duplicate model ids', () => {
    const text = `providers:
  mock: { type: mock }
models:
  - { id: a, kind: chat, routes: [ { provider: mock } ] }
  - { id: b, kind: chat, routes: [ { provider: mock } ] }
  - { id: a, kind: embedding, routes: [ { provider: mock } ] }
`;
    expect(configError(text)).toBe("gw.yaml:6:11: models[2].id: duplicate model id 'a'");
  });

  test('out-of-range numbers', () => {
    const timeouts =
      'providers:\n  mock:\n    type: mock\n    timeouts:\n      connect_ms: 0\nmodels: [ { id: a, kind: chat, routes: [ { provider: mock } ] } ]\n';
    expect(configError(timeouts)).toBe('gw.yaml:5:19: providers.mock.timeouts.connect_ms: must be >= 1');
    const body =
      'server:\n  max_body_bytes: 10\nproviders: { mock: { type: mock } }\nmodels: [ { id: a, kind: chat, routes: [ { provider: mock } ] } ]\n';
    expect(configError(body)).toBe('gw.yaml:2:19: server.max_body_bytes: must be >= 1024');
    // Node's timers cannot wait past 2^31 ms (they fire at once): a longer shutdown wait is refused, not cut short
    const delay = body.replace('max_body_bytes: 10', 'shutdown_delay_ms: 86400000');
    expect(configError(delay)).toBe('gw.yaml:2:22: server.shutdown_delay_ms: must be <= 3600000');
    expect(parseConfig(delay.replace('86400000', '3000')).server.shutdown_delay_ms).toBe(3000);
  });

  test('no providers or no models', () => {
    expect(configError('providers: { mock: { type: mock } }\n')).toBe("gw.yaml:1:1: missing required setting 'models'");
    expect(configError('providers: { mock: { type: mock } }\nmodels: []\n')).toBe(
      'gw.yaml:2:9: models: must NOT have fewer than 1 items',
    );
  });

  test('invalid YAML syntax: a duplicate key and a tab used as indentation', () => {
    const duplicate =
      'providers:\n  mock: { type: mock }\nmodels:\n  - { id: a, kind: chat, routes: [ { provider: mock } ] }\nproviders: {}\n';
    expect(configError(duplicate)).toBe('gw.yaml:5:1: invalid YAML: Map keys must be unique');
    const tab =
      'providers:\n  mock: { type: mock }\nmodels:\n  - { id: a, kind: chat, routes: [ { provider: mock } ] }\n\textra: 1\n';
    expect(configError(tab)).toMatch(/^gw\.yaml:5:1: invalid YAML: Tabs are not allowed/);
  });

  test('without a file name the message says <config>', () => {
    expect(() => parseConfig('providers: { mock: { type: mockk } }\nmodels: []\n', null, {})).toThrow(
      /^<config>:1:28: providers\.mock\.type: must be one of /,
    );
  });
});

describe('loadConfig', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-config-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('reads a file and names it in errors', () => {
    const file = path.join(dir, 'bad.yaml');
    fs.writeFileSync(
      file,
      'providers:\n  mock: { type: mock }\nmodels:\n  - { id: a, kind: chat, routes: [ { provider: nope } ] }\n',
    );
    expect(() => loadConfig(file, {})).toThrow(
      new ConfigError(`${file}:4:48: models[0].routes[0].provider: unknown provider 'nope'`),
    );
  });

  test('a missing file is a ConfigError naming the file', () => {
    const file = path.join(dir, 'missing.yaml');
    expect(() => loadConfig(file, {})).toThrow(ConfigError);
    expect(() => loadConfig(file, {})).toThrow(`${file}: cannot read the configuration file (ENOENT)`);
  });

  test('the example configuration at the repository root loads as it is', () => {
    const c = loadConfig(path.join(__dirname, '../../switchyard.example.yaml'), {});
    expect(c.server.max_body_bytes).toBe(10485760);
    expect(c.providers.mock).toMatchObject({ type: 'mock', latency_ms: 20 });
    expect(c.models.map((m) => [m.id, m.kind, m.owned_by])).toEqual([
      ['mock-chat', 'chat', 'switchyard'],
      ['mock-embedding', 'embedding', 'switchyard'],
      ['mock-image', 'image', 'switchyard'],
      ['mock-tts', 'speech', 'switchyard'],
      ['mock-transcribe', 'transcription', 'switchyard'],
      ['mock-moderation', 'moderation', 'switchyard'],
      ['mock-rerank', 'rerank', 'switchyard'],
    ]);
    expect(c.models[5].price.moderation).toBe(100_000_000); // 100 USD per million requests: 100 µUSD a request
    expect(c.models[1].routes).toMatchObject([{ provider: 'mock', model: 'mock-embedding' }]);
    expect(c.models[3].price).toMatchObject({ characters: 15_000_000, input: 0, output: 0 }); // micro-USD per million
    expect(c.models[4].price).toMatchObject({ audio_seconds: 100_000_000 }); // 0.0001 USD a second: 0.006 a minute
  });
});

describe('usage.retention_days and billing.lease_usd', () => {
  const base = `
providers: { local: { type: mock } }
models: [ { id: m, kind: chat, routes: [ { provider: local } ] } ]
`;
  test('defaults: records kept 90 days, a lease of at most 25 USD (16 coding-agent requests of ~0.75 USD)', () => {
    const c = parseConfig(base, 'gw.yaml', {});
    expect(c.usage.retention_days).toBe(90);
    expect(c.billing.lease_micros).toBe(25_000_000);
  });
  test('0 keeps records forever; 31 days or more is accepted', () => {
    expect(parseConfig(`${base}usage: { retention_days: 0 }\n`, 'gw.yaml', {}).usage.retention_days).toBe(0);
    expect(parseConfig(`${base}usage: { retention_days: 31 }\n`, 'gw.yaml', {}).usage.retention_days).toBe(31);
  });
  test('a retention shorter than a month is refused: monthly key budgets are recounted from the records', () => {
    const message = configError(`${base}usage: { retention_days: 7 }\n`);
    expect(message).toMatch(/usage\.retention_days/);
    expect(message).toMatch(/at least 31 days/);
  });
});
