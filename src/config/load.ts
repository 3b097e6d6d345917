/**
 * Reads the gateway's YAML configuration (SWITCHYARD_CONFIG, default ./switchyard.yaml). `${VAR}` and
 * `${VAR:-default}` in string values are replaced from the environment. A broken file throws a ConfigError whose
 * message names the file, the line and column, the setting and the problem. What each provider type can do and
 * which settings of its own it takes comes from the provider registry (the catalog), never from a list here.
 */
import proxyaddr from 'proxy-addr';
import fs from 'node:fs';
import Ajv from 'ajv';
import { LineCounter, isMap, isNode, isScalar, parseDocument } from 'yaml';
import { parseUsd } from '../money';
import { FLAT_PRICE_KEYS, GRADED_PRICE_KEYS, USAGE_CLASSES, familyOf, type PriceKey, type UsageClass } from '../usage';
import { COMMON_PROVIDER_SETTINGS, DEFAULT_TIMEOUTS, configSchema } from './schema';
import {
  ConfigError,
  type BillingConfig,
  type Config,
  type ConsoleConfig,
  type Feature,
  type OidcConfig,
  type LimitsConfig,
  type ModelConfig,
  type ModelKind,
  type CacheMultipliers,
  type PriceConfig,
  type PriceNotice,
  type PriceTier,
  type Rates,
  type ProviderCatalog,
  type ProviderConfig,
  type RoutingConfig,
  type Timeouts,
} from './types';

const DEFAULT_CREATED = 1_735_689_600; // 2025-01-01T00:00:00Z
/** The most an image costs at the providers we know (Claude's high-resolution images: 4,784 tokens). */
export const DEFAULT_IMAGE_TOKENS = 4_800;
/** The most an inline file (a PDF) costs: 100 pages at 3,000 tokens a page (Anthropic's and OpenAI's page limit). */
export const DEFAULT_FILE_TOKENS = 300_000;

type Fail = (path: (string | number)[], problem: string, key?: string) => never;

const validators = new WeakMap<ProviderCatalog, ReturnType<Ajv['compile']>>();
function validatorFor(catalog: ProviderCatalog) {
  let v = validators.get(catalog);
  if (!v) validators.set(catalog, (v = new Ajv({ allErrors: false, strict: false }).compile(configSchema(catalog))));
  return v;
}

/** Reads and checks a configuration file. */
export function loadConfig(
  catalog: ProviderCatalog,
  file = process.env.SWITCHYARD_CONFIG ?? './switchyard.yaml',
  env = process.env,
): Config {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`${file}: cannot read the configuration file (${(e as NodeJS.ErrnoException).code ?? e})`);
  }
  return parseConfig(catalog, text, file, env);
}

/** Parses configuration text; `file` is only used in messages. */
export function parseConfig(
  catalog: ProviderCatalog,
  text: string,
  file: string | null = null,
  env: NodeJS.ProcessEnv = process.env,
): Config {
  const { raw, where } = readYaml(text, file, env);
  return checkConfig(catalog, raw, file, where);
}

/** Where a setting is written: `file:line:col`. */
export type Locate = (path: (string | number)[], key?: string) => string;

/**
 * Configuration text as data, `${VAR}`s expanded, and where each setting is written (for checkConfig's messages):
 * not yet checked.
 */
export function readYaml(
  text: string,
  file: string | null,
  env: NodeJS.ProcessEnv = process.env,
): { raw: Record<string, unknown>; where: Locate } {
  const name = file ?? '<config>';
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const where: Locate = (path, key) => {
    let node = path.length ? doc.getIn(path, true) : doc.contents;
    // An unknown setting is reported at its own key, not at the start of the mapping that holds it.
    if (key !== undefined && isMap(node))
      node = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key)?.key ?? node;
    const offset = isNode(node) && node.range ? node.range[0] : undefined;
    if (offset === undefined) return name;
    const { line, col } = lines.linePos(offset);
    return `${name}:${line}:${col}`;
  };
  if (doc.errors.length) {
    const e = doc.errors[0];
    const { line, col } = lines.linePos(e.pos[0]);
    throw new ConfigError(`${name}:${line}:${col}: invalid YAML: ${e.message.split('\n')[0]}`);
  }
  return { raw: expandEnv(doc.toJS(), [], env, failing(where)) as Record<string, unknown>, where };
}

/**
 * Shortest retention of usage records (0 keeps them forever): a key's budget period, at most a calendar month, is
 * recounted from its usage records when the budget is set or changed (billing/budgets.ts), so they must cover it.
 */
export const MIN_RETENTION_DAYS = 31;

function usageConfig(u: RawConfig['usage'], fail: Fail): Config['usage'] {
  const days = u?.retention_days ?? 90;
  if (days !== 0 && days < MIN_RETENTION_DAYS)
    fail(
      ['usage', 'retention_days'],
      `must be 0 (kept forever) or at least ${MIN_RETENTION_DAYS} days: a key's monthly budget is recounted from the usage records of its month`,
    );
  return { retention_days: days };
}

/** A Fail that throws a ConfigError naming the place (`where`), the setting and the problem. */
function failing(where: Locate): Fail {
  return (path, problem, key) => {
    const setting = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i ? `.${p}` : p)).join('');
    throw new ConfigError(`${where(path, key)}: ${setting ? `${setting}: ` : ''}${problem}`, path, problem);
  };
}

/**
 * Checks a configuration already read (the file's, or the file's settings with a catalog from the database), with the
 * same schema and rules as a file: one place decides what a valid configuration is. `where` names the place of a
 * setting in messages (the file's line and column); without it, the file's name.
 */
export function checkConfig(
  catalog: ProviderCatalog,
  raw: unknown,
  file: string | null,
  where: Locate = () => file ?? '<config>',
): Config {
  const fail = failing(where);
  const validate = validatorFor(catalog);
  if (!validate(raw)) {
    const e = validate.errors![0];
    const path = e.instancePath
      .split('/')
      .slice(1)
      .map((s) => (/^\d+$/.test(s) ? Number(s) : s.replace(/~1/g, '/').replace(/~0/g, '~')));
    let problem = e.message ?? 'invalid';
    let extra =
      e.keyword === 'additionalProperties'
        ? (e.params as { additionalProperty: string }).additionalProperty
        : undefined;
    if (e.keyword === 'false schema') {
      // a setting of another provider type
      extra = String(path.pop());
      const type = (raw as RawConfig).providers?.[String(path[1])]?.type;
      problem = `unknown setting '${extra}' for a provider of type ${type}`;
    }
    if (extra !== undefined && e.keyword === 'additionalProperties') problem = `unknown setting '${extra}'`;
    if (e.keyword === 'required')
      problem = `missing required setting '${(e.params as { missingProperty: string }).missingProperty}'`;
    if (e.keyword === 'enum')
      problem = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    fail(path, problem, extra);
  }
  return normalise(raw as RawConfig, file, catalog, fail);
}

interface RawConfig {
  server?: {
    max_body_bytes?: number;
    trust_proxy?: boolean | number | string[];
    shutdown_grace_ms?: number;
    shutdown_delay_ms?: number;
  };
  routing?: Partial<RoutingConfig>;
  billing?: Partial<Omit<BillingConfig, 'lease_micros'>> & { lease_usd?: number };
  limits?: Partial<LimitsConfig>;
  responses?: { keep_days?: number };
  usage?: { retention_days?: number };
  console?: {
    starter_credits_usd?: number;
    referral_credits_usd?: number;
    session_ttl_days?: number;
    public_url?: string;
    topup_min_usd?: number;
    topup_max_usd?: number;
    login_attempts_per_email?: number;
    login_attempts_per_email_daily?: number;
    login_attempts_per_address?: number;
    login_window_s?: number;
    registrations_per_address?: number;
    registration_window_s?: number;
    referrals_per_month?: number;
    disposable_domains?: string[];
    topup_note?: string;
    captcha?: { provider: 'turnstile' | 'hcaptcha'; site_key: string; secret: string; verify_url?: string };
  };
  admin?: { oidc?: Partial<OidcConfig> & Pick<OidcConfig, 'issuer' | 'client_id' | 'client_secret' | 'roles'> };
  mail?: { smtp_url?: string; from?: string };
  catalog?: 'yaml' | 'database';
  providers: Record<string, Record<string, unknown> & { type: string; timeouts?: Partial<Timeouts> }>;
  models: RawModel[];
}

/** Prices as written: USD per million units, by price key; a graded key's (`images`): USD per unit, by grade. */
type RawRates = Partial<Record<PriceKey, number | Record<string, number>>>;

type RawModel = Omit<Partial<ModelConfig>, 'price' | 'routes'> & {
  id: string;
  kind: ModelKind;
  price?: RawRates & { tiers?: (RawRates & { above_prompt_tokens: number })[] };
  allow?: Feature[];
  routes: { provider: string; model?: string; priority?: number; weight?: number; timeouts?: Partial<Timeouts> }[];
};

/**
 * A provider's address: its `base_url`, else its type's own, fixed or made from its settings (validated by then
 * against its schemas). The type's own is made even when `base_url` is given: a type refuses settings it cannot make
 * it from (a bedrock provider with no region, which its signatures need too), and that is a configuration error
 * naming the provider, at start-up rather than on its first request.
 */
function address(name: string, p: RawConfig['providers'][string], own: ProviderCatalog[string], fail: Fail) {
  const settings = Object.fromEntries(Object.entries(p).filter(([k]) => !COMMON_PROVIDER_SETTINGS.includes(k)));
  let base: string | undefined;
  try {
    base = typeof own.baseUrl === 'function' ? own.baseUrl(settings) : own.baseUrl;
  } catch (e) {
    fail(['providers', name], (e as Error).message);
  }
  return { base_url: ((p.base_url as string | undefined) ?? base)?.replace(/\/+$/, ''), settings };
}

function normalise(raw: RawConfig, file: string | null, catalog: ProviderCatalog, fail: Fail): Config {
  const providers: Record<string, ProviderConfig> = {};
  for (const [name, p] of Object.entries(raw.providers ?? {})) {
    const { base_url, settings } = address(name, p, catalog[p.type], fail);
    providers[name] = {
      name,
      type: p.type,
      base_url,
      api_key: p.api_key as string | undefined,
      headers: (p.headers as Record<string, string> | undefined) ?? {},
      max_connections: (p.max_connections as number | undefined) ?? 64,
      timeouts: { ...DEFAULT_TIMEOUTS, ...p.timeouts },
      latency_ms: (p.latency_ms as number | undefined) ?? 0,
      settings,
    };
  }
  const seen = new Set<string>();
  const priceNotices: PriceNotice[] = [];
  const models = (raw.models ?? []).map((m, i) => {
    if (seen.has(m.id)) fail(['models', i, 'id'], `duplicate model id '${m.id}'`);
    seen.add(m.id);
    return model(m, i, { providers, catalog, fail, notices: priceNotices });
  });
  const b = raw.billing ?? {};
  return {
    file,
    catalog: raw.catalog ?? 'yaml',
    raw: raw as unknown as Record<string, unknown>,
    server: {
      max_body_bytes: raw.server?.max_body_bytes ?? 10 * 1024 * 1024,
      trust_proxy: trustProxy(raw.server?.trust_proxy, fail),
      shutdown_grace_ms: raw.server?.shutdown_grace_ms ?? 30_000,
      shutdown_delay_ms: raw.server?.shutdown_delay_ms ?? 0,
    },
    routing: {
      breaker_failures: raw.routing?.breaker_failures ?? 3,
      breaker_cooldown_ms: raw.routing?.breaker_cooldown_ms ?? 30_000,
    },
    billing: {
      min_output_tokens: b.min_output_tokens ?? 16,
      hold_ttl_ms: b.hold_ttl_ms ?? 60_000,
      sweep_interval_ms: b.sweep_interval_ms ?? 30_000,
      lease_micros: usdMicros(b.lease_usd, '25', ['billing', 'lease_usd'], fail),
      lease_idle_ms: b.lease_idle_ms ?? 30_000,
      flush_ms: b.flush_ms ?? 50,
      flush_rows: b.flush_rows ?? 500,
      refusals_flush_ms: b.refusals_flush_ms ?? 5_000,
      refusals_max_buckets: b.refusals_max_buckets ?? 10_000,
    },
    limits: { rpm: raw.limits?.rpm ?? 1_000, tpm: raw.limits?.tpm ?? 2_000_000 },
    responses: { keep_ms: Math.round((raw.responses?.keep_days ?? 30) * 86_400_000) },
    usage: usageConfig(raw.usage, fail),
    console: consoleConfig(raw.console ?? {}, fail),
    admin: { oidc: raw.admin?.oidc ? oidcConfig(raw.admin.oidc, fail) : null },
    mail: mailConfig(raw, fail),
    providers,
    models,
    priceNotices,
  };
}

/**
 * Outgoing mail. Mailed links (address confirmation, password reset) must point at the operator's own console, never
 * at a host taken from the request that asked for them: anyone may ask for a reset link to someone else's address
 * with `Host: attacker.example`, and the token would then go to the attacker. So mail needs `console.public_url`.
 */
function mailConfig(raw: RawConfig, fail: Fail): Config['mail'] {
  const smtp = raw.mail?.smtp_url || null;
  if (smtp && !raw.console?.public_url)
    fail(
      ['mail', 'smtp_url'],
      'mailed links need console.public_url (e.g. https://switchyard.example.com): they must not take their host from the request that asked for them',
    );
  return { smtp_url: smtp, from: raw.mail?.from ?? 'Switchyard <no-reply@localhost>' };
}

/**
 * Which proxies' X-Forwarded-For entries to believe: none (false), the nearest N hops, or the proxies at these
 * addresses / CIDRs (proxy-addr's names `loopback`, `linklocal`, `uniquelocal` too). `true` would believe whatever
 * the client wrote, so it is refused.
 */
function trustProxy(v: boolean | number | string[] | undefined, fail: Fail): false | number | string[] {
  if (v === undefined || v === false || v === 0) return false;
  if (v === true)
    fail(
      ['server', 'trust_proxy'],
      'true would trust any X-Forwarded-For a client writes; give the proxies instead: their addresses or CIDRs (e.g. [127.0.0.1, 10.0.0.0/8]) or how many there are in front of the gateway (e.g. 1)',
    );
  if (Array.isArray(v)) {
    try {
      proxyaddr.compile(v);
    } catch (e) {
      fail(['server', 'trust_proxy'], (e as Error).message);
    }
  }
  return v as number | string[];
}

interface ModelContext {
  providers: Record<string, ProviderConfig>;
  catalog: ProviderCatalog;
  fail: Fail;
  notices: PriceNotice[];
}

function model(m: RawModel, i: number, { providers, catalog, fail, notices }: ModelContext): ModelConfig {
  m.routes.forEach((r, j) => {
    const p = providers[r.provider];
    if (!p) fail(['models', i, 'routes', j, 'provider'], `unknown provider '${r.provider}'`);
    if (!catalog[p.type].serves.includes(m.kind)) {
      fail(
        ['models', i, 'routes', j, 'provider'],
        `provider '${r.provider}' (type ${p.type}) cannot serve ${m.kind} models`,
      );
    }
  });
  const types = [...new Set(m.routes.map((r) => providers[r.provider].type))];
  return {
    id: m.id,
    kind: m.kind,
    owned_by: m.owned_by ?? m.routes[0].provider,
    created: m.created ?? DEFAULT_CREATED,
    price: priceConfig(m, ['models', i, 'price'], {
      billedBy: types.map((t) => [t, catalog[t].cache ?? {}] as const),
      notices,
      fail,
    }),
    max_output_tokens: m.max_output_tokens ?? 4096,
    ...imageTables(m, i, fail),
    image_tokens: m.image_tokens ?? DEFAULT_IMAGE_TOKENS,
    file_tokens: m.file_tokens ?? DEFAULT_FILE_TOKENS,
    extra_output_tokens: m.extra_output_tokens ?? 0,
    allow: m.allow ?? [],
    routes: m.routes.map((r, j) => ({
      provider: r.provider,
      model: r.model ?? m.id,
      priority: r.priority ?? j, // in the order written, unless routes share a priority (then weighted)
      weight: r.weight ?? 1,
      timeouts: { ...providers[r.provider].timeouts, ...r.timeouts },
    })),
  };
}

interface PriceContext {
  /** The provider types of the model's routes, and what each bills for the classes it bills apart. */
  billedBy: (readonly [string, CacheMultipliers])[];
  notices: PriceNotice[];
  fail: Fail;
}

/**
 * A model's prices: its base rates, then its tiers by prompt size, each over the one below it. Tiers must rise
 * (ascending `above_prompt_tokens`) and each must set a price: a mistake in either would bill long prompts at a tier
 * the operator did not mean.
 */
function priceConfig(m: RawModel, at: (string | number)[], ctx: PriceContext): PriceConfig {
  const grades = gradedPrices(m.price ?? {}, at, ctx.fail);
  const base: Rates & Pick<PriceConfig, 'grades'> = {
    ...rates(m.id, m.price ?? {}, null, at, ctx, undefined, grades),
    ...grades,
  };
  if (!m.price?.tiers?.length) return base;
  const tiers: (Rates & PriceTier)[] = []; // each with every price: the tier above reads the ones it leaves out here
  m.price.tiers.forEach((t, j) => {
    const where = [...at, 'tiers', j];
    const below = tiers.at(-1);
    if (below && t.above_prompt_tokens <= below.above_prompt_tokens) {
      ctx.fail(
        [...where, 'above_prompt_tokens'],
        `tiers must be in ascending order of above_prompt_tokens: ${t.above_prompt_tokens} is not above ${below.above_prompt_tokens} (the tier before it)`,
      );
    }
    if (!FLAT_PRICE_KEYS.some((k) => t[k] !== undefined))
      ctx.fail(where, `a tier must set at least one price (${FLAT_PRICE_KEYS.join(', ')})`);
    tiers.push({
      ...rates(m.id, t, below ?? base, where, ctx, t.above_prompt_tokens),
      above_prompt_tokens: t.above_prompt_tokens,
    });
  });
  return { ...base, tiers };
}

/**
 * The graded prices (`price.images`: USD per image by `<size>/<quality>`), as micro-USD per million units: one unit
 * priced like every other class, so that billing adds images to tokens in one exact sum.
 */
function gradedPrices(raw: RawRates, at: (string | number)[], fail: Fail): Pick<PriceConfig, 'grades'> {
  const grades: NonNullable<PriceConfig['grades']> = {};
  for (const key of GRADED_PRICE_KEYS) {
    const table = raw[key] as Record<string, number> | undefined;
    if (!table) continue;
    grades[key] = Object.fromEntries(
      Object.entries(table).map(([g, v]) => [g, usdMicros(v, '0', [...at, key, g], fail) * 1_000_000]),
    );
  }
  return Object.keys(grades).length ? { grades } : {};
}

/**
 * An image model's tables by grade: what sizes and qualities it is sold at (the keys of `price.images` and of
 * `image_output_tokens`, which must agree when both are given), and the most output tokens an image of each costs
 * when its output is priced by tokens — without them a hold could not know what `n` images may cost.
 */
function imageTables(m: RawModel, i: number, fail: Fail): Pick<ModelConfig, 'image_output_tokens'> {
  const prices = m.price?.images as Record<string, number> | undefined;
  const tokens = m.image_output_tokens;
  if (m.kind !== 'image') {
    if (prices) fail(['models', i, 'price', 'images'], 'only image models (kind: image) have prices per image');
    if (tokens) fail(['models', i, 'image_output_tokens'], 'only image models (kind: image) have it');
    return {};
  }
  if (!prices && !tokens)
    fail(
      ['models', i, 'price'],
      'an image model needs price.images (USD per image by <size>/<quality>, e.g. 1024x1024/standard: 0.04) or image_output_tokens (the most output tokens an image of each size and quality costs)',
    );
  if (!tokens && m.price?.output)
    fail(
      ['models', i, 'image_output_tokens'],
      'an image model whose output is priced by tokens needs the most output tokens an image of each size and quality costs (gpt-image-1: 1024x1024/high: 4160...)',
    );
  const differ = prices && tokens && Object.keys(prices).sort().join() !== Object.keys(tokens).sort().join();
  if (differ) fail(['models', i, 'image_output_tokens'], 'must list the same sizes and qualities as price.images');
  return tokens ? { image_output_tokens: tokens } : {};
}

/**
 * One set of rates, read in the order of the usage classes (a family's price before its parts'). A price left out
 * is, for a class at the top of a family (`input`, `output`), the tier below's (the base's: 0, free); for a part
 * (the cache classes), what the model's providers bill for it at this tier's family price (partPrice).
 */
function rates(
  model: string,
  raw: RawRates,
  below: Rates | null,
  at: (string | number)[],
  ctx: PriceContext,
  tier?: number,
  graded: Pick<PriceConfig, 'grades'> = {},
): Rates {
  const out: Partial<Record<PriceKey, number>> = {};
  for (const c of USAGE_CLASSES as readonly UsageClass[]) {
    if (c.price === null) continue;
    const key = c.price as PriceKey;
    if (c.graded) {
      // a tier does not change it (a graded price is per unit, not per prompt size); without a grade: the dearest
      const table = graded.grades?.[key];
      const v = below ? below[key] : table && Math.max(...Object.values(table));
      if (v !== undefined) out[key] = v;
      continue;
    }
    const read = (v: number) => usdMicros(v, '0', [...at, key], ctx.fail);
    const family = familyOf(c, USAGE_CLASSES).price;
    const own = raw[key] as number | undefined;
    if (c.partOf === null) out[key] = own === undefined ? (below?.[key] ?? 0) : read(own);
    else
      out[key] = partPrice({ model, key, tier }, own, family === null ? 0 : (out[family as PriceKey] ?? 0), ctx, read);
    // A later class's price that comes to nothing is left out, as a Usage leaves out its count (Price reads 0).
    if (!out[key] && !c.apiField) delete out[key];
  }
  return out as Rates;
}

/**
 * A part's price (a cache class's): as configured, or — left out — what the model's providers bill for it: the
 * highest of their multipliers of the family's price (rounded up to a whole micro-USD per million), or the family's
 * price when none bills the class apart. A derived price, and a configured one below what a provider bills, are
 * noted for start-up's log.
 */
function partPrice(
  of: { model: string; key: PriceKey; tier?: number },
  configured: number | undefined,
  familyPrice: number,
  ctx: PriceContext,
  read: (v: number) => number,
): number {
  // A provider without a multiplier for the class bills its tokens (if it reports them at all) as the family's.
  let top = { provider: '', billed: -1, derived: false };
  for (const [provider, multipliers] of ctx.billedBy) {
    const perMille = multipliers[of.key];
    const billed = perMille === undefined ? familyPrice : Math.ceil((familyPrice * perMille) / 1000);
    if (billed > top.billed) top = { provider, billed, derived: perMille !== undefined };
  }
  const { provider, billed, derived } = top;
  const notice = (price: number, kind: PriceNotice['kind']) =>
    ctx.notices.push({
      model: of.model,
      class: of.key,
      ...(of.tier !== undefined ? { tier: of.tier } : {}),
      price,
      kind,
      provider,
      billed,
    });
  if (configured === undefined) {
    if (derived && familyPrice) notice(billed, 'derived');
    return billed;
  }
  const price = read(configured);
  if (derived && price < billed) notice(price, 'below');
  return price;
}

/** A USD amount as written (at most 6 decimals) → micro-USD, exactly. */
function usdMicros(value: number | undefined, fallback: string, path: (string | number)[], fail: Fail): number {
  try {
    return parseUsd(value === undefined ? fallback : String(value));
  } catch {
    return fail(path, 'must be a USD amount with at most 6 decimals');
  }
}

function consoleConfig(c: NonNullable<RawConfig['console']>, fail: Fail): ConsoleConfig {
  const usd = (name: keyof typeof c, fallback: string): number =>
    usdMicros(c[name] as number | undefined, fallback, ['console', name], fail);
  const min = usd('topup_min_usd', '5');
  const max = usd('topup_max_usd', '1000');
  if (min % 10_000 || max % 10_000)
    fail(['console', min % 10_000 ? 'topup_min_usd' : 'topup_max_usd'], 'must be whole cents');
  if (max < min) fail(['console', 'topup_max_usd'], 'must not be below topup_min_usd');
  return {
    starter_credits_micros: usd('starter_credits_usd', '1'),
    referral_credits_micros: usd('referral_credits_usd', '20'),
    session_ttl_ms: Math.round((c.session_ttl_days ?? 30) * 86_400_000),
    public_url: c.public_url ?? null,
    topup_min_micros: min,
    topup_max_micros: max,
    login_attempts_per_email: c.login_attempts_per_email ?? 10,
    login_attempts_per_email_daily: c.login_attempts_per_email_daily ?? 100,
    login_attempts_per_address: c.login_attempts_per_address ?? 50,
    login_window_s: c.login_window_s ?? 900,
    registrations_per_address: c.registrations_per_address ?? 20,
    registration_window_s: c.registration_window_s ?? 3600,
    referrals_per_month: c.referrals_per_month ?? 10,
    topup_note: c.topup_note?.trim() || null,
    disposable_domains: (c.disposable_domains ?? DISPOSABLE_DOMAINS).map((d) => d.trim().toLowerCase()),
    captcha: c.captcha ? { ...c.captcha, verify_url: c.captcha.verify_url ?? SITEVERIFY[c.captcha.provider] } : null,
  };
}

/**
 * OpenID Connect for operators, with its defaults. Without `openid` among the scopes the provider would answer no ID
 * token (plain OAuth): nobody's identity could be checked.
 */
function oidcConfig(o: NonNullable<NonNullable<RawConfig['admin']>['oidc']>, fail: Fail): OidcConfig {
  issuerProblem(o.issuer, fail);
  const scopes = o.scopes ?? ['openid', 'email', 'profile'];
  if (!scopes.includes('openid')) fail(['admin', 'oidc', 'scopes'], 'must include openid');
  return {
    issuer: o.issuer,
    client_id: o.client_id,
    client_secret: o.client_secret,
    label: o.label ?? new URL(o.issuer).host,
    redirect_url: o.redirect_url ?? null,
    scopes,
    groups_claim: o.groups_claim ?? 'groups',
    roles: o.roles,
    allow_password: o.allow_password ?? true,
  };
}

/**
 * An issuer is HTTPS, or plain HTTP to a provider on this machine (a loopback address, as in the tests): who may run
 * the gateway is what its answers say. Discovery appends /.well-known/openid-configuration: no query, no fragment.
 */
function issuerProblem(issuer: string, fail: Fail): void {
  const at = ['admin', 'oidc', 'issuer'];
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return fail(at, 'must be a URL (https://...)');
  }
  if (url.search || url.hash) fail(at, 'must have no query or fragment');
  if (url.protocol === 'http:' && !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))
    fail(at, 'must be https:// (http:// only to a provider on a loopback address: 127.0.0.1, localhost, [::1])');
}

/** The providers' documented server-side token checks. */
const SITEVERIFY = {
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
  hcaptcha: 'https://api.hcaptcha.com/siteverify',
};

/** Well-known disposable-mail domains, refused at registration unless `console.disposable_domains` replaces the list. */
const DISPOSABLE_DOMAINS = [
  '10minutemail.com',
  'dispostable.com',
  'emailondeck.com',
  'fakeinbox.com',
  'getnada.com',
  'guerrillamail.com',
  'guerrillamail.net',
  'mailcatch.com',
  'maildrop.cc',
  'mailinator.com',
  'mailnesia.com',
  'mintemail.com',
  'moakt.com',
  'sharklasers.com',
  'spamgourmet.com',
  'temp-mail.org',
  'tempmail.com',
  'tempmailo.com',
  'throwawaymail.com',
  'trashmail.com',
  'yopmail.com',
  'yopmail.net',
];

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

function expandEnv(value: unknown, path: (string | number)[], env: NodeJS.ProcessEnv, fail: Fail): unknown {
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
