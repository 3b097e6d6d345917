/** The configuration as the rest of the gateway sees it: read, checked and with every default filled in. */
import type { ModelKind, OperatorRole } from '../contract';
import type { BasePriceKey, PriceKey } from '../usage';

/** What a model does (`kind`): the contract's ModelKind; which operations serve it is the contract's too. */
export type { ModelKind };

/**
 * Features that make an upstream charge more than a model's token prices (or more tokens than a request shows); a
 * model serves them only when allowed: the operator's prices for it must then cover them. See README, Money.
 */
export const FEATURES = [
  'priority',
  'audio',
  'web_search',
  'server_tools',
  'long_context',
  'data_residency',
  'cache_1h',
] as const;
export type Feature = (typeof FEATURES)[number];

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
  /** The provider type: a folder of src/gateway/providers. */
  type: string;
  base_url?: string;
  api_key?: string;
  headers: Record<string, string>;
  /** Most connections kept open to this upstream. */
  max_connections: number;
  timeouts: Timeouts;
  /** mock only: delay before the answer and between stream chunks. */
  latency_ms: number;
  /** Settings of the provider type's own (e.g. azure's api_version), checked against its descriptor. */
  settings: Record<string, unknown>;
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

/**
 * Micro-USD per million units of each usage class that has a price key (usage.ts, USAGE_CLASSES: `input`, `output`,
 * `cached_input`, `cache_write`, `cache_write_1h`); the configuration says USD per million, read exactly. A price
 * for a part of another class (the cache classes) that the configuration leaves out is priced from the providers'
 * multipliers of its family's price (CacheMultipliers), or at that price when none of the model's providers bills the
 * class apart.
 */
export type Rates = Record<BasePriceKey, number> & Partial<Record<PriceKey, number>>;

/** A model's prices above a prompt size: the prices left out are those of the tier below, the cache ones derived. */
export interface PriceTier extends PriceRates {
  /** The tier applies to requests whose prompt (every prompt token, cached ones included) is above this many tokens. */
  above_prompt_tokens: number;
}

/**
 * Rates as a price reads them: a loaded configuration gives every key of the first classes (Rates), but a price left
 * out costs 0, so that prices written for a purpose (tests, tools) need not list every class there is, nor change
 * when a class is added.
 */
export type PriceRates = Partial<Rates>;

/**
 * A model's prices: its base rates, and the tiers above them by prompt size (ascending), when it has any. A graded
 * class (usage.ts: generated images) has its prices by grade in `grades`, micro-USD per million units; its rate in
 * Rates is the dearest grade's, what it costs when the grade is not known.
 */
export type PriceConfig = PriceRates & {
  tiers?: PriceTier[];
  grades?: Partial<Record<PriceKey, Readonly<Record<string, number>>>>;
};

/**
 * A generated image's grade, `<size>/<quality>` (`1024x1024/hd`): what an image model's prices and output bounds are
 * keyed by, and what a request's `size` and `quality` pick from.
 */
export const GRADE = /^([1-9][0-9]*x[1-9][0-9]*)\/([a-z]+)$/;

/** What a provider bills for the classes it bills apart from their family, in thousandths of the family's price (Anthropic: 100, 1250, 2000). */
export type CacheMultipliers = Partial<Record<PriceKey, number>>;

/** What start-up says about a model's prices: a class priced from a multiplier, or priced below what is billed. */
export interface PriceNotice {
  model: string;
  class: PriceKey;
  /** Of the tier above this many prompt tokens; absent: the base price. */
  tier?: number;
  /** Micro-USD per million tokens. */
  price: number;
  /** derived: priced from the multiplier; below: configured under what the provider bills (sold at a loss). */
  kind: 'derived' | 'below';
  /** The provider type whose multiplier it is, and the price that multiplier gives. */
  provider: string;
  billed: number;
}

export interface ModelConfig {
  id: string;
  kind: ModelKind;
  owned_by: string;
  /** Unix seconds, shown in /v1/models. */
  created: number;
  price: PriceConfig;
  /** Output tokens allowed when the request sets no limit. */
  max_output_tokens: number;
  /** What an image may cost at most, in prompt tokens (held per image). */
  image_tokens: number;
  /** What an inline file (a PDF...) may cost at most, in prompt tokens (held per file). */
  file_tokens: number;
  /**
   * Output tokens the upstream may generate beyond the limit it is sent, per choice (DeepSeek's R1 reasons up to
   * 32,768 tokens beyond max_tokens): held on top of every choice's allowance. 0 by default.
   */
  extra_output_tokens: number;
  /**
   * Image models priced by tokens: the most output tokens one image of each grade (`<size>/<quality>`) costs, held per
   * image (gpt-image-1: 6,240 at 1536x1024 in high quality).
   */
  image_output_tokens?: Readonly<Record<string, number>>;
  /** Price-raising features the configured prices already cover (otherwise refused or stripped). */
  allow: Feature[];
  routes: RouteConfig[];
}

export interface Config {
  file: string | null;
  /**
   * Where providers and models come from: the file (`yaml`, the default) or the database's newest catalog revision
   * (`database`; services/catalog.ts), which the file's own seed on the first start.
   */
  catalog: 'yaml' | 'database';
  /** The configuration as read (environment expanded): a catalog from the database is checked within it. */
  raw: Record<string, unknown>;
  /**
   * trust_proxy: behind reverse proxies, the client is the rightmost X-Forwarded-For entry that is not one of them
   * (false: the connection's own address; a number: that many hops; a list: their addresses / CIDRs).
   * shutdown_grace_ms: on SIGTERM, how long requests and streams in flight may take to finish.
   * shutdown_delay_ms: on SIGTERM, how long the listener stays open at least (new requests answered 503, /readyz
   * failing), so that a load balancer's health checks take the node out before its connections are refused.
   */
  server: {
    max_body_bytes: number;
    trust_proxy: false | number | string[];
    shutdown_grace_ms: number;
    shutdown_delay_ms: number;
  };
  routing: RoutingConfig;
  billing: BillingConfig;
  limits: LimitsConfig;
  /** Stored responses of the Responses API: how long one is kept (`responses.keep_days`, 30 by default). */
  responses: { keep_ms: number };
  /**
   * Usage records older than `retention_days` (90 by default; 0: kept forever) are deleted in the background, a
   * small batch at a time; the daily rollups and the ledger are kept.
   */
  usage: { retention_days: number };
  console: ConsoleConfig;
  /** How operators sign in to /admin: OpenID Connect besides (or instead of) passwords. */
  admin: AdminConfig;
  mail: MailConfig;
  providers: Record<string, ProviderConfig>;
  models: ModelConfig[];
  /** What start-up logs about prices, once: the cache prices derived, and those set below what is billed. */
  priceNotices: PriceNotice[];
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
  /**
   * Failed log-ins allowed within the window per (email, client address) pair — so a stranger's guesses lock out
   * only the stranger — and per client address; and per email over 24 h from every address together (slower).
   */
  login_attempts_per_email: number;
  login_attempts_per_email_daily: number;
  login_attempts_per_address: number;
  login_window_s: number;
  /** Registrations allowed per client address within the window (0: no limit). */
  registrations_per_address: number;
  registration_window_s: number;
  /** Referral credits a referrer may earn per calendar month (UTC). */
  referrals_per_month: number;
  /** What the Top up page says about where redemption codes come from; null: the console's own words. */
  topup_note: string | null;
  /** Mail domains refused at registration (disposable mailboxes), lower case. */
  disposable_domains: string[];
  /** A CAPTCHA on registration (Cloudflare Turnstile or hCaptcha), or null: none (the default). */
  captcha: CaptchaConfig | null;
}

export interface AdminConfig {
  /** OpenID Connect sign-in for operators (`admin.oidc`), or null: passwords only (the default). */
  oidc: OidcConfig | null;
}

/**
 * An OpenID provider operators sign in with. Its groups claim decides the role: each group named in `roles` maps to
 * a role, and an operator gets the most powerful role of all its groups that map (none: refused).
 */
export interface OidcConfig {
  /** The issuer, whose /.well-known/openid-configuration is read (discovery). */
  issuer: string;
  client_id: string;
  /** The client's secret at the provider (e.g. `${OIDC_CLIENT_SECRET}`): never in a log line or an answer. */
  client_secret: string;
  /** The provider's name on the sign-in page ("Sign in with <label>"); default: the issuer's host. */
  label: string;
  /**
   * Where the provider sends the browser back: registered at the provider as it is written here. Default:
   * console.public_url + /admin/api/session/oidc/callback, or without public_url the origin the browser reached.
   */
  redirect_url: string | null;
  /** Scopes asked for; `openid` among them. Default: openid, email, profile. */
  scopes: string[];
  /** The claim (of the ID token, else of userinfo) that lists the user's groups. Default: groups. */
  groups_claim: string;
  /** Group → role. */
  roles: Record<string, OperatorRole>;
  /** Whether operators may still sign in with a password (default true). */
  allow_password: boolean;
}

export interface CaptchaConfig {
  provider: 'turnstile' | 'hcaptcha';
  /** Public: the console's widget shows it. */
  site_key: string;
  /** The provider's secret, for the server-side check (e.g. `${TURNSTILE_SECRET}`). */
  secret: string;
  /** Where tokens are checked (the provider's siteverify; another URL for tests). */
  verify_url: string;
}

/** Outgoing mail (verification and password-reset links). Without `smtp_url` the links are written to the log. */
export interface MailConfig {
  smtp_url: string | null;
  from: string;
}

export interface BillingConfig {
  /** A request whose balance covers fewer output tokens than this is refused instead of shortened. */
  min_output_tokens: number;
  /** How long a hold or a lease lives unless its process renews it (it renews every third of this). */
  hold_ttl_ms: number;
  /** How often expired holds and leases (of processes that died) are settled. */
  sweep_interval_ms: number;
  /** The most a process reserves at once for one key (a credit lease), micro-USD. */
  lease_micros: number;
  /** A lease nobody used for this long goes back to the account. */
  lease_idle_ms: number;
  /** Settlements are written in batches: at most this long after a request ended... */
  flush_ms: number;
  /** ...or as soon as this many are waiting. */
  flush_rows: number;
  /** Refused calls of known keys are counted in memory and written this often (and at stop). */
  refusals_flush_ms: number;
  /** The most distinct refusal counts (key, minute, reason...) kept between writes; beyond, the oldest is dropped. */
  refusals_max_buckets: number;
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

/** What the configuration needs to know of each provider type (the gateway's provider registry provides it). */
export interface ProviderCatalog {
  [type: string]: {
    /**
     * Where the upstream is unless the configuration says: an address, or one made from the provider's own settings
     * (a cloud's region or location: `bedrock-runtime.<region>.amazonaws.com`).
     */
    baseUrl?: string | ((settings: Record<string, unknown>) => string);
    /** `base_url` must be configured (an upstream over HTTP without a default address). */
    needsBaseUrl: boolean;
    /** The kinds of model it can serve. */
    serves: readonly ModelKind[];
    /** JSON Schemas of the settings of its own. */
    settings?: Record<string, object>;
    /** Those of its own settings it must be given. */
    required?: string[];
    /** What it bills for cache classes, when it bills them apart from input. */
    cache?: CacheMultipliers;
    /** Those of its own settings that are credentials: encrypted at rest, never shown (services/catalog.ts). */
    secrets?: string[];
  };
}

export class ConfigError extends Error {
  override name = 'ConfigError';
  /**
   * `path`: the setting that is wrong (`['models', 2, 'price', 'input']`) and `problem`: what is wrong with it, apart
   * from the place, for callers that name it their own way (the catalog API's `param`).
   */
  constructor(
    message: string,
    readonly path: (string | number)[] = [],
    readonly problem: string = message,
  ) {
    super(message);
  }
}
