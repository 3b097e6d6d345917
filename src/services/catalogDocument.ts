/**
 * The catalog document — `{ providers: {...}, models: [...] }` in the YAML's own raw form — and what is done to it:
 * its credentials sealed and opened (secrets.ts), shown (never more than their last 4 characters), and the edits
 * of the admin API. Pure functions; storing, checking and applying are services/catalog.ts's.
 *
 * A provider's credentials are its `api_key`, the settings its type declares secret (ProviderDescriptor.secrets)
 * and the values of headers whose names say they carry one (Authorization, x-api-key, api-key...).
 */
import type { ProviderCatalog } from '../config';
import { PROVIDER_CATALOG } from '../gateway/providers';
import { decrypt, encrypt, isSealed, last4, SecretKeyError } from '../secrets';

export type RawProvider = Record<string, unknown> & { type: string; headers?: Record<string, string> };
export type RawModel = Record<string, unknown> & { id: string; routes?: { provider: string }[] };

export interface CatalogDocument {
  providers: Record<string, RawProvider>;
  models: RawModel[];
}

/** A header that carries a credential, by its name (case-insensitive). */
export const isSecretHeader = (name: string): boolean => /auth|api[-_]?key|token|secret|password/i.test(name);

/** The credential settings of a provider type (besides `api_key`). */
export const secretSettings = (type: string, catalog: ProviderCatalog = PROVIDER_CATALOG): string[] =>
  catalog[type]?.secrets ?? [];

/** Where a provider's credentials are: `api_key`, its type's secret settings, `headers.<Name>` of secret headers. */
export function credentialNames(p: RawProvider): string[] {
  const own = ['api_key', ...secretSettings(p.type)].filter((k) => typeof p[k] === 'string');
  const headers = Object.keys(p.headers ?? {}).filter(isSecretHeader);
  return [...own, ...headers.map((h) => `headers.${h}`)];
}

function getCredential(p: RawProvider, name: string): string | undefined {
  return name.startsWith('headers.') ? p.headers?.[name.slice(8)] : (p[name] as string | undefined);
}

/** Every credential of the document through `f` (a new document; the one given is not changed). */
export function mapCredentials(doc: CatalogDocument, f: (value: string, where: string) => string): CatalogDocument {
  const providers: Record<string, RawProvider> = {};
  for (const [name, p] of Object.entries(doc.providers)) {
    const copy: RawProvider = { ...p, ...(p.headers ? { headers: { ...p.headers } } : {}) };
    for (const c of credentialNames(p)) {
      const v = f(getCredential(p, c)!, `providers.${name}.${c}`);
      if (c.startsWith('headers.')) copy.headers![c.slice(8)] = v;
      else copy[c] = v;
    }
    providers[name] = copy;
  }
  return { providers, models: doc.models };
}

export const hasCredentials = (doc: CatalogDocument): boolean =>
  Object.values(doc.providers).some((p) => credentialNames(p).length > 0);

/** The document with every credential encrypted (those already sealed stay as they are). */
export function seal(doc: CatalogDocument, key: Buffer | null): CatalogDocument {
  return mapCredentials(doc, (v) => {
    if (isSealed(v)) return v;
    if (!key)
      throw new SecretKeyError(
        'SWITCHYARD_SECRET_KEY is not set: the catalog has provider credentials, which are stored encrypted under it (32 random bytes as base64 or hex: openssl rand -base64 32)',
      );
    return encrypt(v, key);
  });
}

/** The document with every credential decrypted: a SecretKeyError when there is no key or it is not the right one. */
export function open(doc: CatalogDocument, key: Buffer | null): CatalogDocument {
  return mapCredentials(doc, (v) => {
    if (!isSealed(v)) return v;
    if (!key)
      throw new SecretKeyError(
        'catalog: database, and the stored catalog has encrypted provider credentials, but SWITCHYARD_SECRET_KEY is not set',
      );
    return decrypt(v, key);
  });
}

/** A provider as the admin API shows it: settings apart, credentials as their last 4 characters. */
export function providerView(name: string, p: RawProvider) {
  const { type, base_url, api_key, headers, max_connections, timeouts, latency_ms, ...own } = p;
  const secret = secretSettings(type);
  const shown = (v: unknown) => (typeof v === 'string' ? last4(v) : null);
  return {
    name,
    type,
    base_url: (base_url as string | undefined) ?? null,
    settings: Object.fromEntries(Object.entries(own).filter(([k]) => !secret.includes(k))),
    headers: Object.fromEntries(
      Object.entries(headers ?? {}).map(([h, v]) => [h, isSecretHeader(h) ? last4(String(v)) : v]),
    ),
    credentials: Object.fromEntries(['api_key', ...secret].map((k) => [k, shown(k === 'api_key' ? api_key : own[k])])),
    ...(max_connections !== undefined ? { max_connections: max_connections as number } : {}),
    ...(timeouts !== undefined ? { timeouts: timeouts as Record<string, number> } : {}),
    ...(latency_ms !== undefined ? { latency_ms: latency_ms as number } : {}),
  };
}

/** A refusal of an edit, for the admin API to answer: what is wrong, and the field (`param`) it is about. */
export class CatalogError extends Error {
  override name = 'CatalogError';
  constructor(
    readonly kind: 'invalid' | 'not_found' | 'conflict' | 'yaml' | 'credential',
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

/** A provider as the admin API takes it (PUT): the view's shape; credentials left out are kept, null removes one. */
export interface ProviderInput {
  type: string;
  base_url?: string | null;
  settings?: Record<string, unknown>;
  headers?: Record<string, string | null>;
  credentials?: Record<string, string | null>;
  max_connections?: number;
  timeouts?: Record<string, number>;
  latency_ms?: number;
}

/** The result of an edit: the new document, and which credentials it sets or removes (only an owner may). */
export interface Edited {
  doc: CatalogDocument;
  credentialsChanged: string[];
}

/** PUT a provider: replaces it, keeping the credentials the input leaves out (and a secret header sent back masked). */
export function putProvider(doc: CatalogDocument, name: string, input: ProviderInput): Edited {
  const old = doc.providers[name];
  const secret = secretSettings(input.type);
  for (const k of Object.keys(input.settings ?? {})) {
    if (secret.includes(k) || k === 'api_key')
      throw new CatalogError('invalid', `${k} is a credential: send it in credentials`, `settings.${k}`);
  }
  const next: RawProvider = { type: input.type, ...(input.settings ?? {}) };
  if (input.base_url) next.base_url = input.base_url;
  for (const k of ['max_connections', 'timeouts', 'latency_ms'] as const)
    if (input[k] !== undefined) next[k] = input[k];
  const changed: string[] = [];
  for (const k of ['api_key', ...secret]) {
    const given = input.credentials?.[k];
    const kept = old?.[k];
    if (given === undefined) {
      if (typeof kept === 'string') next[k] = kept;
    } else {
      if (given !== null) next[k] = given;
      if (given !== kept) changed.push(k);
    }
  }
  for (const k of Object.keys(input.credentials ?? {})) {
    if (!['api_key', ...secret].includes(k))
      throw new CatalogError(
        'invalid',
        `a provider of type ${input.type} has no credential '${k}'`,
        `credentials.${k}`,
      );
  }
  const headers = mergeHeaders(old?.headers ?? {}, input.headers, changed);
  if (Object.keys(headers).length) next.headers = headers;
  return { doc: { providers: { ...doc.providers, [name]: next }, models: doc.models }, credentialsChanged: changed };
}

/**
 * The headers of a PUT: as given, except secret ones: left out or sent back as shown (`…c0de`), the stored value
 * stays; null removes it; another value replaces it (a credential change).
 */
function mergeHeaders(
  old: Record<string, string>,
  given: Record<string, string | null> | undefined,
  changed: string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [h, v] of Object.entries(old)) if (isSecretHeader(h) && !(given && h in given)) out[h] = v;
  if (!given) return { ...old };
  for (const [h, v] of Object.entries(given)) {
    const before = old[h];
    if (!isSecretHeader(h)) {
      if (v !== null) out[h] = v;
    } else if (v !== null && before !== undefined && (v === before || v === last4(before))) out[h] = before;
    else {
      if (v !== null) out[h] = v;
      if (v !== before && !(v === null && before === undefined)) changed.push(`headers.${h}`);
    }
  }
  return out;
}

/** DELETE a provider: refused while models route to it (they are named). */
export function deleteProvider(doc: CatalogDocument, name: string): Edited {
  if (!doc.providers[name]) throw new CatalogError('not_found', `No such provider: ${name}`, 'name');
  const using = doc.models.filter((m) => (m.routes ?? []).some((r) => r.provider === name)).map((m) => m.id);
  if (using.length)
    throw new CatalogError(
      'conflict',
      `Provider ${name} is used by the routes of ${using.join(', ')}: change or delete those models first`,
      'name',
    );
  const providers = { ...doc.providers };
  delete providers[name];
  // Its credentials go with it: removing a provider is a provider edit (admin), not a credential change.
  return { doc: { providers, models: doc.models }, credentialsChanged: [] };
}

/** PUT a model (its raw form, routes included): replaces the one with this id in its place, or adds it at the end. */
export function putModel(doc: CatalogDocument, id: string, model: Record<string, unknown>): Edited {
  if (model.id !== undefined && model.id !== id)
    throw new CatalogError('invalid', `id must be the one in the path (${id}), or left out`, 'id');
  const next = { ...model, id } as RawModel;
  const i = doc.models.findIndex((m) => m.id === id);
  const models = i < 0 ? [...doc.models, next] : doc.models.map((m, j) => (j === i ? next : m));
  return { doc: { providers: doc.providers, models }, credentialsChanged: [] };
}

export function deleteModel(doc: CatalogDocument, id: string): Edited {
  if (!doc.models.some((m) => m.id === id)) throw new CatalogError('not_found', `No such model: ${id}`, 'id');
  return { doc: { providers: doc.providers, models: doc.models.filter((m) => m.id !== id) }, credentialsChanged: [] };
}
