/**
 * The gateway's YAML configuration (SWITCHYARD_CONFIG, default ./switchyard.yaml): providers and models.
 * `${VAR}` and `${VAR:-default}` in string values are replaced from the environment. A broken file throws a
 * ConfigError whose message names the file, the line and column, the setting and the problem.
 */
import fs from 'node:fs';
import Ajv from 'ajv';
import { parseUsd } from './billing/money';
import { LineCounter, isMap, isNode, isScalar, parseDocument } from 'yaml';

export type ModelKind = 'chat' | 'completion' | 'embedding';
export type ProviderType = 'openai' | 'anthropic' | 'gemini' | 'mock';

export interface Timeouts {
  /** TCP/TLS connect. */
  connect_ms: number;
  /** From sending the request to the response headers (for streams: the first byte). */
  first_byte_ms: number;
  /** Longest silence between two body chunks. */
  idle_ms: number;
  /** Whole request, headers to last byte. */
  total_ms: number;
}

export interface ProviderConfig {
  name: string;
  type: ProviderType;
  base_url?: string;
  api_key?: string;
  headers: Record<string, string>;
  /** Most connections kept open to this upstream. */
  max_connections: number;
  timeouts: Timeouts;
  /** mock only: delay before the answer and between stream chunks. */
  latency_ms: number;
}

export interface RouteConfig {
  provider: string;
  /** The model id the upstream knows. */
  model: string;
  /** Lower goes first (default: the route's position in the list). */
  priority: number;
  /** Share of traffic among routes of the same priority (default 1). */
  weight: number;
  /** The provider's timeouts with this route's overrides. */
  timeouts: Timeouts;
}

export interface ModelConfig {
  id: string;
  kind: ModelKind;
  owned_by: string;
  /** Unix seconds, shown in /v1/models. */
  created: number;
  /** Micro-USD per million tokens (the configuration says USD per million tokens, read exactly). */
  price: { input: number; output: number };
  /** Output tokens allowed when the request sets no max_tokens. */
  max_output_tokens: number;
  routes: RouteConfig[];
}

export interface Config {
  file: string | null;
  /** trust_proxy: behind a reverse proxy, take the client's address from X-Forwarded-For (its first entry). */
  server: { max_body_bytes: number; trust_proxy: boolean };
  routing: RoutingConfig;
  billing: BillingConfig;
  limits: LimitsConfig;
  console: ConsoleConfig;
  providers: Record<string, ProviderConfig>;
  models: ModelConfig[];
}

/** The web console: sign-up credits, sessions, card top-ups, brute-force limits. Amounts in micro-USD. */
export interface ConsoleConfig {
  /** Credited to every account registered through the console (ledger kind `signup`). */
  starter_credits_micros: number;
  /** Credited to both the new account and the referrer when a valid referral code is used (kind `referral`). */
  referral_credits_micros: number;
  /** How long a login lasts. */
  session_ttl_ms: number;
  /** Base of absolute links (referral link, Stripe return URLs); default: the request's own scheme and host. */
  public_url: string | null;
  /** Card top-up bounds. */
  topup_min_micros: number;
  topup_max_micros: number;
  /** Failed log-ins allowed per email and per client address within the window. */
  login_attempts_per_email: number;
  login_attempts_per_address: number;
  login_window_s: number;
  /** Registrations allowed per client address within the window (0: no limit). */
  registrations_per_address: number;
  registration_window_s: number;
}

export interface BillingConfig {
  /** A request whose balance covers fewer output tokens than this is refused instead of shortened. */
  min_output_tokens: number;
  /** How long a hold lives unless its process renews it (it renews every third of this). */
  hold_ttl_ms: number;
  /** How often expired holds (of processes that died) are settled. */
  sweep_interval_ms: number;
}

/** Default per-key limits; a key's own setting wins. 0 means no limit. */
export interface LimitsConfig {
  rpm: number;
  tpm: number;
}

export interface RoutingConfig {
  /** Consecutive failures after which a route is skipped for a cool-down. */
  breaker_failures: number;
  /** How long a failing route is skipped before one request probes it again. */
  breaker_cooldown_ms: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const DEFAULT_TIMEOUTS: Timeouts = { connect_ms: 10_000, first_byte_ms: 120_000, idle_ms: 60_000, total_ms: 600_000 };
const DEFAULT_CREATED = 1_735_689_600; // 2025-01-01T00:00:00Z

/** Where each provider type is, unless the configuration says otherwise. */
const DEFAULT_BASE_URL: Record<ProviderType, string | undefined> = {
  openai: undefined, // required: there are many OpenAI-compatible upstreams
  anthropic: 'https://api.anthropic.com/v1',
  gemini: 'https://generativelanguage.googleapis.com/v1beta',
  mock: undefined,
};

/** The kinds of model each provider type can serve. */
const SERVES: Record<ProviderType, ModelKind[]> = {
  openai: ['chat', 'completion', 'embedding'],
  anthropic: ['chat'],
  gemini: ['chat', 'embedding'],
  mock: ['chat', 'completion', 'embedding'],
};

const timeoutsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(Object.keys(DEFAULT_TIMEOUTS).map((k) => [k, { type: 'integer', minimum: 1 }])),
};

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['providers', 'models'],
  properties: {
    server: {
      type: 'object',
      additionalProperties: false,
      properties: { max_body_bytes: { type: 'integer', minimum: 1024 }, trust_proxy: { type: 'boolean' } },
    },
    billing: {
      type: 'object',
      additionalProperties: false,
      properties: {
        min_output_tokens: { type: 'integer', minimum: 1 },
        hold_ttl_ms: { type: 'integer', minimum: 100 },
        sweep_interval_ms: { type: 'integer', minimum: 100 },
      },
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: { rpm: { type: 'integer', minimum: 0 }, tpm: { type: 'integer', minimum: 0 } },
    },
    console: {
      type: 'object',
      additionalProperties: false,
      properties: {
        starter_credits_usd: { type: 'number', minimum: 0 },
        referral_credits_usd: { type: 'number', minimum: 0 },
        session_ttl_days: { type: 'number', exclusiveMinimum: 0 },
        public_url: { type: 'string', pattern: '^https?://[^/]+$' },
        topup_min_usd: { type: 'number', minimum: 0.5 },
        topup_max_usd: { type: 'number', minimum: 0.5 },
        login_attempts_per_email: { type: 'integer', minimum: 1 },
        login_attempts_per_address: { type: 'integer', minimum: 1 },
        login_window_s: { type: 'integer', minimum: 1 },
        registrations_per_address: { type: 'integer', minimum: 0 },
        registration_window_s: { type: 'integer', minimum: 1 },
      },
    },
    routing: {
      type: 'object',
      additionalProperties: false,
      properties: {
        breaker_failures: { type: 'integer', minimum: 1 },
        breaker_cooldown_ms: { type: 'integer', minimum: 1 },
      },
    },
    providers: {
      type: 'object',
      minProperties: 1,
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['type'],
        properties: {
          type: { enum: ['openai', 'anthropic', 'gemini', 'mock'] },
          base_url: { type: 'string', pattern: '^https?://' },
          api_key: { type: 'string' },
          headers: { type: 'object', additionalProperties: { type: 'string' } },
          max_connections: { type: 'integer', minimum: 1 },
          timeouts: timeoutsSchema,
          latency_ms: { type: 'integer', minimum: 0 },
        },
        if: { properties: { type: { const: 'openai' } } },
        then: { required: ['base_url'] },
      },
    },
    models: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'kind', 'routes'],
        properties: {
          id: { type: 'string', minLength: 1, pattern: '^[^\\s]+$' },
          kind: { enum: ['chat', 'completion', 'embedding'] },
          owned_by: { type: 'string' },
          created: { type: 'integer', minimum: 0 },
          price: {
            type: 'object',
            additionalProperties: false,
            properties: { input: { type: 'number', minimum: 0 }, output: { type: 'number', minimum: 0 } },
          },
          max_output_tokens: { type: 'integer', minimum: 1 },
          routes: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['provider'],
              properties: {
                provider: { type: 'string' },
                model: { type: 'string' },
                priority: { type: 'integer' },
                weight: { type: 'number', exclusiveMinimum: 0 },
                timeouts: timeoutsSchema,
              },
            },
          },
        },
      },
    },
  },
};

const validate = new Ajv({ allErrors: false, strict: false }).compile(schema);

/** Reads and checks a configuration file. */
export function loadConfig(file = process.env.SWITCHYARD_CONFIG ?? './switchyard.yaml', env = process.env): Config {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`${file}: cannot read the configuration file (${(e as NodeJS.ErrnoException).code ?? e})`);
  }
  return parseConfig(text, file, env);
}

/** Parses configuration text; `file` is only used in messages. */
export function parseConfig(text: string, file: string | null = null, env: NodeJS.ProcessEnv = process.env): Config {
  const name = file ?? '<config>';
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const where = (path: (string | number)[], key?: string) => {
    let node = path.length ? doc.getIn(path, true) : doc.contents;
    // An unknown setting is reported at its own key, not at the start of the mapping that holds it.
    if (key !== undefined && isMap(node)) node = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key)?.key ?? node;
    const offset = isNode(node) && node.range ? node.range[0] : undefined;
    if (offset === undefined) return name;
    const { line, col } = lines.linePos(offset);
    return `${name}:${line}:${col}`;
  };
  const fail = (path: (string | number)[], problem: string, key?: string): never => {
    const setting = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i ? `.${p}` : p)).join('');
    throw new ConfigError(`${where(path, key)}: ${setting ? `${setting}: ` : ''}${problem}`);
  };
  if (doc.errors.length) {
    const e = doc.errors[0];
    const { line, col } = lines.linePos(e.pos[0]);
    throw new ConfigError(`${name}:${line}:${col}: invalid YAML: ${e.message.split('\n')[0]}`);
  }
  const raw = expandEnv(doc.toJS(), [], env, fail);
  if (!validate(raw)) {
    const e = validate.errors![0];
    const path = e.instancePath.split('/').slice(1).map((s) => (/^\d+$/.test(s) ? Number(s) : s.replace(/~1/g, '/').replace(/~0/g, '~')));
    let problem = e.message ?? 'invalid';
    const extra = e.keyword === 'additionalProperties' ? (e.params as { additionalProperty: string }).additionalProperty : undefined;
    if (extra !== undefined) problem = `unknown setting '${extra}'`;
    if (e.keyword === 'required') problem = `missing required setting '${(e.params as { missingProperty: string }).missingProperty}'`;
    if (e.keyword === 'enum') problem = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    fail(path, problem, extra);
  }
  return normalise(raw as RawConfig, file, fail);
}

interface RawConfig {
  server?: { max_body_bytes?: number; trust_proxy?: boolean };
  routing?: Partial<RoutingConfig>;
  billing?: Partial<BillingConfig>;
  limits?: Partial<LimitsConfig>;
  console?: {
    starter_credits_usd?: number;
    referral_credits_usd?: number;
    session_ttl_days?: number;
    public_url?: string;
    topup_min_usd?: number;
    topup_max_usd?: number;
    login_attempts_per_email?: number;
    login_attempts_per_address?: number;
    login_window_s?: number;
    registrations_per_address?: number;
    registration_window_s?: number;
  };
  providers: Record<string, Omit<Partial<ProviderConfig>, 'timeouts'> & { type: ProviderType; timeouts?: Partial<Timeouts> }>;
  models: (Partial<ModelConfig> & { id: string; kind: ModelKind; routes: { provider: string; model?: string; priority?: number; weight?: number; timeouts?: Partial<Timeouts> }[] })[];
}

function normalise(raw: RawConfig, file: string | null, fail: (p: (string | number)[], m: string) => never): Config {
  const providers: Record<string, ProviderConfig> = {};
  for (const [name, p] of Object.entries(raw.providers)) {
    providers[name] = {
      name,
      type: p.type,
      base_url: (p.base_url ?? DEFAULT_BASE_URL[p.type])?.replace(/\/+$/, ''),
      api_key: p.api_key,
      headers: p.headers ?? {},
      max_connections: p.max_connections ?? 64,
      timeouts: { ...DEFAULT_TIMEOUTS, ...p.timeouts },
      latency_ms: p.latency_ms ?? 0,
    };
  }
  const seen = new Set<string>();
  const models = raw.models.map((m, i): ModelConfig => {
    if (seen.has(m.id)) fail(['models', i, 'id'], `duplicate model id '${m.id}'`);
    seen.add(m.id);
    m.routes.forEach((r, j) => {
      const p = providers[r.provider];
      if (!p) fail(['models', i, 'routes', j, 'provider'], `unknown provider '${r.provider}'`);
      if (!SERVES[p.type].includes(m.kind)) {
        fail(['models', i, 'routes', j, 'provider'], `provider '${r.provider}' (type ${p.type}) cannot serve ${m.kind} models`);
      }
    });
    return {
      id: m.id,
      kind: m.kind,
      owned_by: m.owned_by ?? m.routes[0].provider,
      created: m.created ?? DEFAULT_CREATED,
      price: {
        input: priceMicros(m.price?.input, ['models', i, 'price', 'input'], fail),
        output: priceMicros(m.price?.output, ['models', i, 'price', 'output'], fail),
      },
      max_output_tokens: m.max_output_tokens ?? 4096,
      routes: m.routes.map((r, j) => ({
        provider: r.provider,
        model: r.model ?? m.id,
        priority: r.priority ?? j, // in the order written, unless routes share a priority (then weighted)
        weight: r.weight ?? 1,
        timeouts: { ...providers[r.provider].timeouts, ...r.timeouts },
      })),
    };
  });
  return {
    file,
    server: { max_body_bytes: raw.server?.max_body_bytes ?? 10 * 1024 * 1024, trust_proxy: raw.server?.trust_proxy ?? false },
    routing: { breaker_failures: raw.routing?.breaker_failures ?? 3, breaker_cooldown_ms: raw.routing?.breaker_cooldown_ms ?? 30_000 },
    billing: {
      min_output_tokens: raw.billing?.min_output_tokens ?? 16,
      hold_ttl_ms: raw.billing?.hold_ttl_ms ?? 60_000,
      sweep_interval_ms: raw.billing?.sweep_interval_ms ?? 30_000,
    },
    limits: { rpm: raw.limits?.rpm ?? 1_000, tpm: raw.limits?.tpm ?? 2_000_000 },
    console: consoleConfig(raw.console ?? {}, fail),
    providers,
    models,
  };
}

function consoleConfig(c: NonNullable<RawConfig['console']>, fail: (p: (string | number)[], m: string) => never): ConsoleConfig {
  const usd = (name: keyof typeof c, fallback: string): number => {
    const v = c[name];
    if (v === undefined) return parseUsd(fallback);
    try {
      return parseUsd(String(v));
    } catch {
      return fail(['console', name], 'must be a USD amount with at most 6 decimals');
    }
  };
  const min = usd('topup_min_usd', '5');
  const max = usd('topup_max_usd', '1000');
  if (min % 10_000 || max % 10_000) fail(['console', min % 10_000 ? 'topup_min_usd' : 'topup_max_usd'], 'must be whole cents');
  if (max < min) fail(['console', 'topup_max_usd'], 'must not be below topup_min_usd');
  return {
    starter_credits_micros: usd('starter_credits_usd', '1'),
    referral_credits_micros: usd('referral_credits_usd', '20'),
    session_ttl_ms: Math.round((c.session_ttl_days ?? 30) * 86_400_000),
    public_url: c.public_url ?? null,
    topup_min_micros: min,
    topup_max_micros: max,
    login_attempts_per_email: c.login_attempts_per_email ?? 10,
    login_attempts_per_address: c.login_attempts_per_address ?? 50,
    login_window_s: c.login_window_s ?? 900,
    registrations_per_address: c.registrations_per_address ?? 20,
    registration_window_s: c.registration_window_s ?? 3600,
  };
}

/** USD per million tokens, as written → micro-USD per million tokens, exactly (at most 6 decimals). */
function priceMicros(usd: number | undefined, path: (string | number)[], fail: (p: (string | number)[], m: string) => never): number {
  if (usd === undefined) return 0;
  try {
    return parseUsd(String(usd));
  } catch {
    return fail(path, 'must be a USD amount with at most 6 decimals');
  }
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

function expandEnv(
  value: unknown,
  path: (string | number)[],
  env: NodeJS.ProcessEnv,
  fail: (p: (string | number)[], m: string) => never,
): unknown {
  if (typeof value === 'string') {
    return value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) return fallback;
      return fail(path, `environment variable ${name} is not set`);
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, [...path, i], env, fail));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandEnv(v, [...path, k], env, fail)]));
  }
  return value;
}

