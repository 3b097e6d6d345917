/**
 * The JSON Schema of the configuration file. Provider types come from the provider registry (the catalog): each
 * type's own settings are allowed on its providers only.
 */
import { MODEL_KINDS, OPERATOR_ROLES } from '../contract';
import { FLAT_PRICE_KEYS, GRADED_PRICE_KEYS } from '../usage';
import { FEATURES, GRADE, type ProviderCatalog, type Timeouts } from './types';

export const DEFAULT_TIMEOUTS: Timeouts = {
  connect_ms: 10_000,
  first_byte_ms: 120_000,
  idle_ms: 60_000,
  total_ms: 600_000,
};

/** Settings every provider takes, whatever its type. */
export const COMMON_PROVIDER_SETTINGS = [
  'type',
  'base_url',
  'api_key',
  'headers',
  'max_connections',
  'timeouts',
  'latency_ms',
];

const timeouts = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(Object.keys(DEFAULT_TIMEOUTS).map((k) => [k, { type: 'integer', minimum: 1 }])),
};

const object = (properties: Record<string, object>, required: string[] = []) => ({
  type: 'object',
  additionalProperties: false,
  required,
  properties,
});
const usd = { type: 'number', minimum: 0 };
const int = (minimum: number) => ({ type: 'integer', minimum });

/** The settings a provider type must be given: `base_url` when it has no address of its own, and its own required ones. */
function required(entry: ProviderCatalog[string]): { required?: string[] } {
  const names = [...(entry.needsBaseUrl ? ['base_url'] : []), ...(entry.required ?? [])];
  return names.length ? { required: names } : {};
}

function providerSchema(catalog: ProviderCatalog): object {
  const types = Object.keys(catalog);
  const own = new Map<string, object>();
  for (const t of types) for (const [k, s] of Object.entries(catalog[t].settings ?? {})) own.set(k, s);
  return {
    type: 'object',
    additionalProperties: false,
    required: ['type'],
    properties: {
      type: { enum: types },
      base_url: { type: 'string', pattern: '^https?://' },
      api_key: { type: 'string' },
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      max_connections: int(1),
      timeouts,
      latency_ms: int(0),
      ...Object.fromEntries(own),
    },
    allOf: types.map((t) => ({
      if: { properties: { type: { const: t } } },
      then: {
        ...required(catalog[t]),
        // Another type's settings are unknown here.
        properties: Object.fromEntries(
          [...own.keys()].filter((k) => !(k in (catalog[t].settings ?? {}))).map((k) => [k, false]),
        ),
      },
    })),
  };
}

const SERVER = object({
  max_body_bytes: int(1024),
  // false, a hop count, or the proxies' addresses / CIDRs (load.ts refuses `true` with what to write instead)
  trust_proxy: {
    oneOf: [
      { type: 'boolean' },
      { type: 'integer', minimum: 0 },
      { type: 'array', items: { type: 'string', minLength: 1 } },
    ],
  },
  // at most an hour: a longer wait is a mistake, and Node's timers cannot wait past 2^31 ms (they fire at once)
  shutdown_grace_ms: { ...int(0), maximum: 3_600_000 },
  shutdown_delay_ms: { ...int(0), maximum: 3_600_000 },
});

const CONSOLE = object({
  starter_credits_usd: usd,
  referral_credits_usd: usd,
  session_ttl_days: { type: 'number', exclusiveMinimum: 0 },
  public_url: { type: 'string', pattern: '^https?://[^/]+$' },
  topup_min_usd: { type: 'number', minimum: 0.5 },
  topup_max_usd: { type: 'number', minimum: 0.5 },
  login_attempts_per_email: int(1),
  login_attempts_per_email_daily: int(1),
  login_attempts_per_address: int(1),
  login_window_s: int(1),
  registrations_per_address: int(0),
  registration_window_s: int(1),
  referrals_per_month: int(0),
  disposable_domains: { type: 'array', items: { type: 'string', minLength: 1 } },
  topup_note: { type: 'string', maxLength: 500 },
  captcha: object(
    {
      provider: { enum: ['turnstile', 'hcaptcha'] },
      site_key: { type: 'string', minLength: 1 },
      secret: { type: 'string', minLength: 1 },
      verify_url: { type: 'string', pattern: '^https?://' },
    },
    ['provider', 'site_key', 'secret'],
  ),
});

/** Operators' sign-in: OpenID Connect (`admin.oidc`); load.ts checks the issuer further (HTTPS, or loopback). */
const ADMIN = object({
  oidc: object(
    {
      issuer: { type: 'string', pattern: '^https?://' },
      client_id: { type: 'string', minLength: 1 },
      client_secret: { type: 'string', minLength: 1 },
      label: { type: 'string', minLength: 1, maxLength: 60 },
      redirect_url: { type: 'string', pattern: '^https?://[^/?#]+/[^?#]*$' },
      scopes: {
        type: 'array',
        minItems: 1,
        uniqueItems: true,
        items: { type: 'string', pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$' },
      },
      groups_claim: { type: 'string', minLength: 1 },
      roles: {
        type: 'object',
        minProperties: 1,
        propertyNames: { minLength: 1 },
        additionalProperties: { enum: [...OPERATOR_ROLES] },
      },
      allow_password: { type: 'boolean' },
    },
    ['issuer', 'client_id', 'client_secret', 'roles'],
  ),
});

/** A table by grade (`<size>/<quality>`, config/types.ts GRADE) of image prices or output bounds. */
const byGrade = (value: object) => ({
  type: 'object',
  minProperties: 1,
  propertyNames: { pattern: GRADE.source },
  additionalProperties: value,
});
/**
 * USD per million units by price key (usage.ts), USD per unit by grade for a graded one (`images`), and tiers of the
 * flat prices above a prompt size (load.ts checks their order).
 */
const RATES = Object.fromEntries(FLAT_PRICE_KEYS.map((k) => [k, usd]));
const PRICE = object({
  ...RATES,
  ...Object.fromEntries(GRADED_PRICE_KEYS.map((k) => [k, byGrade(usd)])),
  tiers: { type: 'array', items: object({ above_prompt_tokens: int(1), ...RATES }, ['above_prompt_tokens']) },
});

/** A model as written: what it is, its prices and limits, and its routes in order. */
const MODEL = object(
  {
    id: { type: 'string', minLength: 1, pattern: '^[^\\s]+$' },
    kind: { enum: [...MODEL_KINDS] },
    owned_by: { type: 'string' },
    created: int(0),
    price: PRICE,
    max_output_tokens: int(1),
    image_tokens: int(0),
    file_tokens: int(0),
    extra_output_tokens: int(0),
    image_output_tokens: byGrade(int(1)),
    allow: { type: 'array', items: { enum: [...FEATURES] }, uniqueItems: true },
    routes: {
      type: 'array',
      minItems: 1,
      items: object(
        {
          provider: { type: 'string' },
          model: { type: 'string' },
          priority: { type: 'integer' },
          weight: { type: 'number', exclusiveMinimum: 0 },
          timeouts,
        },
        ['provider'],
      ),
    },
  },
  ['id', 'kind', 'routes'],
);

export function configSchema(catalog: ProviderCatalog): object {
  const schema = object(
    {
      catalog: { enum: ['yaml', 'database'] },
      server: SERVER,
      billing: object({
        min_output_tokens: int(1),
        hold_ttl_ms: int(100),
        sweep_interval_ms: int(100),
        lease_usd: usd,
        lease_idle_ms: int(100),
        flush_ms: int(1),
        flush_rows: int(1),
        refusals_flush_ms: int(100),
        refusals_max_buckets: int(1),
      }),
      limits: object({ rpm: int(0), tpm: int(0) }),
      responses: object({ keep_days: { type: 'number', exclusiveMinimum: 0 } }),
      usage: object({ retention_days: int(0) }),
      console: CONSOLE,
      admin: ADMIN,
      mail: object({ smtp_url: { type: 'string' }, from: { type: 'string', minLength: 3 } }),
      routing: object({ breaker_failures: int(1), breaker_cooldown_ms: int(1) }),
      providers: { type: 'object', minProperties: 1, additionalProperties: providerSchema(catalog) },
      models: { type: 'array', minItems: 1, items: MODEL },
    },
    [],
  );
  // With the catalog in the database, the file's providers and models are only the first revision's seed.
  return {
    ...schema,
    if: { properties: { catalog: { const: 'database' } }, required: ['catalog'] },
    else: { required: ['providers', 'models'] },
  };
}
