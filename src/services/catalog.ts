/**
 * The catalog — providers and models — where `catalog:` says: the configuration file (`yaml`, the default), or the
 * database (`database`): the newest of the append-only revisions of db/catalog.ts, credentials sealed with
 * SWITCHYARD_SECRET_KEY (secrets.ts). With the database:
 * - at start, a database with no catalog gets the file's providers and models as its first revision;
 * - a change (the admin API, `switchyard catalog import`) is the whole new document, checked by the same code as the
 *   file (config/load.ts checkConfig, within the file's own settings), written as one row based on the revision it was
 *   made from. When another change was written on that revision first, this one is made again on top of it (edits
 *   are per provider or model, so making it again is what the operator meant); nothing is ever half-written.
 * - every process polls the newest revision's id each second (and, with Redis, hears of a change at once) and applies
 *   a new one to new requests (services/app.ts reload: requests in flight finish on the catalog they started with).
 *   The process that made a change applies it before it answers, so the next request anywhere in it sees it.
 */
import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { Document as YamlDocument, type Scalar, type YAMLMap } from 'yaml';
import { checkConfig, ConfigError, readYaml, type Config } from '../config';
import { newestRevisionId, readRevision, rewriteRevisions, StaleRevision, writeRevision } from '../db/catalog';
import { PROVIDER_CATALOG } from '../gateway/providers';
import { resealTotpSecrets } from '../accounts/operators';
import { last4, secretKey, SecretKeyError } from '../secrets';
import { recordAudit, type AuditEntry } from './audit';
import {
  CatalogError,
  credentialNames,
  open,
  providerView,
  seal,
  type CatalogDocument,
  type Edited,
  type RawModel,
  type RawProvider,
} from './catalogDocument';

export const CATALOG_CHANNEL = 'switchyard:catalog';
/** How often each process asks for the newest revision's id: a change is live everywhere within about this long. */
const POLL_MS = 1_000;
/** How many times a change is made again on top of changes written meanwhile before the operator is told. */
const ATTEMPTS = 5;

export interface CatalogDeps {
  db: Knex;
  log: Logger;
  redis: Redis | null;
  env: NodeJS.ProcessEnv;
  /** The configuration read from the file: its settings, and with `catalog: yaml` the catalog itself. */
  config: Config;
  /** Serves a configuration's providers and models to new requests (services/app.ts reload). */
  apply: (config: Config) => void;
}

export const parseDocument = (text: string): CatalogDocument => JSON.parse(text) as CatalogDocument;

/** Who makes a change, for its audit record (written with the revision): its target's state before and after is added. */
export type ChangeAudit = Omit<AuditEntry, 'before' | 'after'>;

/** A provider or a model of a document as the audit log and the API show it (credentials masked), or null. */
export function snapshotOf(doc: CatalogDocument, target: string | null): unknown {
  const [kind, ...rest] = target?.split(':') ?? [];
  const name = rest.join(':');
  if (kind === 'provider') return doc.providers[name] ? providerView(name, doc.providers[name]) : null;
  if (kind === 'model') return doc.models.find((m) => m.id === name) ?? null;
  return null;
}

export class Catalog {
  /** The revision this process serves (null: the file's catalog). */
  revision: number | null = null;
  private doc: CatalogDocument;
  private readonly key: Buffer | null;
  private timer: NodeJS.Timeout | null = null;
  private closers: (() => void)[] = [];
  private polling: Promise<void> | null = null;
  private pollFailing = false;
  /** A revision that could not be applied here (logged once; the one before is still served). */
  private refused = 0;

  constructor(private readonly deps: CatalogDeps) {
    this.key = secretKey(deps.env.SWITCHYARD_SECRET_KEY);
    const raw = deps.config.raw as Partial<CatalogDocument>;
    this.doc = { providers: raw.providers ?? {}, models: raw.models ?? [] };
  }

  get source(): 'yaml' | 'database' {
    return this.deps.config.catalog;
  }

  private get file(): string {
    return this.deps.config.file ?? 'the configuration file';
  }

  /** With the database: imports the file's catalog into an empty one, serves the newest revision, starts to follow it. */
  async start(): Promise<void> {
    if (this.source !== 'database') return;
    if ((await newestRevisionId(this.deps.db)) === 0) await this.importFile();
    await this.load();
    this.timer = setInterval(() => void this.poll(), POLL_MS).unref();
    this.listen();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.closers.splice(0).forEach((c) => c());
  }

  private async importFile(): Promise<void> {
    if (!Object.keys(this.doc.providers).length || !this.doc.models.length)
      throw new ConfigError(
        `${this.file}: catalog: database, but the database holds no catalog yet and the file has no providers and models to start it with: add them to the file, or run switchyard catalog import --file F`,
      );
    try {
      await writeRevision(this.deps.db, 0, JSON.stringify(seal(this.doc, this.key)), `config:${this.file}`);
    } catch (e) {
      if (!(e instanceof StaleRevision)) throw e; // another process imported it first: the same file, most likely
    }
  }

  /** Applies the newest revision when it is not the one served; throws (SecretKeyError, ConfigError) when it cannot. */
  private async load(): Promise<void> {
    const rev = await readRevision(this.deps.db);
    if (!rev || rev.id === this.revision) return;
    const doc = open(parseDocument(rev.document), this.key);
    this.adopt(rev.id, doc, this.check(doc));
  }

  private adopt(revision: number, doc: CatalogDocument, config: Config): void {
    if (this.revision !== null && revision <= this.revision) return;
    this.deps.apply(config);
    this.doc = doc;
    this.revision = revision;
    this.deps.log.info({ revision, models: doc.models.length }, 'catalog revision applied');
  }

  /** The newest revision, when it changed; a failure is logged once and tried again at the next poll. */
  async poll(): Promise<void> {
    this.polling ??= this.pollOnce().finally(() => (this.polling = null));
    return this.polling;
  }

  private async pollOnce(): Promise<void> {
    let newest = 0;
    try {
      newest = await newestRevisionId(this.deps.db);
      if (this.pollFailing) this.deps.log.info('the catalog can be read again');
      this.pollFailing = false;
      if (newest !== this.revision && newest !== this.refused) await this.load();
    } catch (e) {
      if (e instanceof SecretKeyError || e instanceof ConfigError) {
        this.refused = newest;
        this.deps.log.error(
          { revision: newest, err: e.message },
          'catalog revision not applied (the one before is still served)',
        );
      } else if (!this.pollFailing) {
        this.pollFailing = true;
        this.deps.log.warn({ err: (e as Error).message }, 'cannot read the catalog; trying again every second');
      }
    }
  }

  /** With Redis, another process's change is heard at once (polling stays, in case a message is lost). */
  private listen(): void {
    if (!this.deps.redis) return;
    const sub = this.deps.redis.duplicate();
    sub.on('message', () => void this.poll());
    sub.on('error', () => undefined); // the shared client logs outages; polling covers them
    sub.subscribe(CATALOG_CHANNEL).catch(() => undefined);
    this.closers.push(() => sub.disconnect());
  }

  private announce(revision: number): void {
    this.deps.redis?.publish(CATALOG_CHANNEL, String(revision)).catch(() => undefined);
  }

  /** The configuration a document makes within the file's settings, checked as the file is. */
  check(doc: CatalogDocument): Config {
    const raw = { ...this.deps.config.raw, providers: doc.providers, models: doc.models };
    return checkConfig(PROVIDER_CATALOG, raw, this.deps.config.file);
  }

  /**
   * Makes a change (`edit` of the newest document) and serves it: checked whole, written as one revision, applied
   * here before this returns. `owner`: whether the caller may set or remove credentials. The audit record is written
   * in the revision's transaction.
   */
  async change(edit: (doc: CatalogDocument) => Edited, audit: ChangeAudit, owner: boolean): Promise<number> {
    if (this.source !== 'database')
      throw new CatalogError(
        'yaml',
        `The catalog is read from ${this.file} (catalog: yaml); set catalog: database in it and run switchyard catalog import --file ${this.file} (or restart: the file's providers and models become the first revision)`,
      );
    for (let attempt = 1; ; attempt++) {
      const base = await readRevision(this.deps.db);
      const current = base ? open(parseDocument(base.document), this.key) : { providers: {}, models: [] };
      const { doc, credentialsChanged } = edit(current);
      if (credentialsChanged.length && !owner)
        throw new CatalogError('credential', credentialsChanged[0], `credentials.${credentialsChanged[0]}`);
      const config = this.checkEdit(doc);
      try {
        const record = (trx: Knex) =>
          recordAudit(trx, {
            ...audit,
            before: snapshotOf(current, audit.target),
            after: snapshotOf(doc, audit.target),
          });
        const sealed = JSON.stringify(seal(doc, this.key));
        const id = await writeRevision(this.deps.db, base?.id ?? 0, sealed, audit.actor, record);
        this.adopt(id, doc, config);
        this.announce(id);
        return id;
      } catch (e) {
        if (!(e instanceof StaleRevision)) throw e;
        if (attempt === ATTEMPTS)
          throw new CatalogError('conflict', 'The catalog is being changed by others right now; try again');
      }
    }
  }

  /** checkConfig, its refusal said of the provider or model it is about, with the field as `param`. */
  private checkEdit(doc: CatalogDocument): Config {
    try {
      return this.check(doc);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      throw invalid(doc, e);
    }
  }

  /** The catalog as the admin API shows it: credentials as their last 4 characters. */
  view() {
    return {
      source: this.source,
      revision: this.revision,
      providers: Object.entries(this.doc.providers).map(([name, p]) => providerView(name, p)),
      models: this.doc.models,
    };
  }

  /** A provider or a model as the audit log records it (`provider:openai`, `model:gpt-4o`), or null. */
  snapshot(target: string): unknown {
    return snapshotOf(this.doc, target);
  }

  /** The document served (credentials in the clear: for this process's own use, never for an answer). */
  document(): CatalogDocument {
    return this.doc;
  }
}

/** A ConfigError about a document as the admin API says it: `model gpt-x: price.input: must be >= 0`, param `price.input`. */
function invalid(doc: CatalogDocument, e: ConfigError): CatalogError {
  const [top, at, ...rest] = e.path;
  const field = rest.map((p, i) => (typeof p === 'number' ? `[${p}]` : i ? `.${p}` : p)).join('');
  if (top === 'models' && typeof at === 'number') {
    const m: RawModel | undefined = doc.models[at];
    return new CatalogError('invalid', `model ${m?.id}: ${field ? `${field}: ` : ''}${e.problem}`, field || null);
  }
  if (top === 'providers' && typeof at === 'string') {
    const p: RawProvider | undefined = doc.providers[at];
    const [setting] = rest;
    const secret =
      setting === 'api_key' ||
      (p && typeof setting === 'string' && PROVIDER_CATALOG[p.type]?.secrets?.includes(setting));
    const own = p && typeof setting === 'string' && setting in (PROVIDER_CATALOG[p.type]?.settings ?? {}) && !secret;
    const param = secret ? `credentials.${field}` : own ? `settings.${field}` : field;
    return new CatalogError('invalid', `provider ${at}: ${field ? `${field}: ` : ''}${e.problem}`, param || null);
  }
  return new CatalogError('invalid', e.problem === e.message ? e.message : `${e.path.join('.')}: ${e.problem}`);
}

/** The newest stored document, opened (a SecretKeyError without the right key), or null when there is none. */
async function stored(db: Knex, key: Buffer | null): Promise<{ id: number; doc: CatalogDocument } | null> {
  const rev = await readRevision(db);
  return rev ? { id: rev.id, doc: open(parseDocument(rev.document), key) } : null;
}

/**
 * `switchyard catalog export`: the newest revision as YAML (providers, models), credentials left out: a comment above
 * each provider that has some says they are kept in the database, with their last 4 characters.
 */
export async function exportCatalog(db: Knex, env: NodeJS.ProcessEnv): Promise<{ yaml: string; revision: number }> {
  const found = await stored(db, secretKey(env.SWITCHYARD_SECRET_KEY));
  if (!found) throw new CatalogError('not_found', 'the database holds no catalog yet (switchyard catalog import)');
  const notes = new Map<string, string>();
  const providers: Record<string, RawProvider> = {};
  for (const [name, p] of Object.entries(found.doc.providers)) {
    const copy: RawProvider = { ...p, ...(p.headers ? { headers: { ...p.headers } } : {}) };
    const kept = credentialNames(p).map((c) => {
      if (c.startsWith('headers.')) delete copy.headers![c.slice(8)];
      else delete copy[c];
      return `${c} ${last4(String(c.startsWith('headers.') ? p.headers![c.slice(8)] : p[c]))}`;
    });
    if (copy.headers && !Object.keys(copy.headers).length) delete copy.headers;
    if (kept.length)
      notes.set(name, ` credentials kept in the database (left out, import keeps them): ${kept.join(', ')}`);
    providers[name] = copy;
  }
  const yaml = new YamlDocument({ providers, models: found.doc.models });
  const map = yaml.get('providers', true) as YAMLMap<Scalar, unknown>;
  for (const pair of map.items) {
    const note = notes.get(String(pair.key.value));
    if (note) pair.key.commentBefore = note;
  }
  yaml.commentBefore = ` Switchyard catalog, revision ${found.id} (switchyard catalog export)`;
  return { yaml: yaml.toString({ lineWidth: 120 }), revision: found.id };
}

/**
 * `switchyard catalog import`: a file's providers and models (`${VAR}`s expanded) as a new revision, checked within
 * the configuration's settings as the file would be (its messages say where in `file`). A credential the file leaves
 * out of a provider that is stored with the same type keeps the stored one.
 */
export async function importCatalog(
  db: Knex,
  config: Config,
  text: string,
  file: string,
  o: { env: NodeJS.ProcessEnv; audit: ChangeAudit },
): Promise<{ revision: number; providers: number; models: number }> {
  const key = secretKey(o.env.SWITCHYARD_SECRET_KEY);
  const { raw, where } = readYaml(text, file, o.env);
  const given = raw as Partial<CatalogDocument>;
  const doc: CatalogDocument = { providers: given.providers ?? {}, models: given.models ?? [] };
  const before = await stored(db, key);
  for (const [name, p] of Object.entries(doc.providers)) {
    const old = before?.doc.providers[name];
    if (old && typeof p === 'object' && old.type === p.type) doc.providers[name] = keepCredentials(p, old);
  }
  checkConfig(PROVIDER_CATALOG, { ...config.raw, ...doc }, file, where);
  const counts = { providers: Object.keys(doc.providers).length, models: doc.models.length };
  const record = (trx: Knex, revision: number) =>
    recordAudit(trx, { ...o.audit, before: null, after: { revision, ...counts } });
  const revision = await writeRevision(db, before?.id ?? 0, JSON.stringify(seal(doc, key)), o.audit.actor, record);
  return { revision, ...counts };
}

function keepCredentials(p: RawProvider, old: RawProvider): RawProvider {
  const out: RawProvider = { ...p, ...(p.headers || old.headers ? { headers: { ...p.headers } } : {}) };
  for (const c of credentialNames(old)) {
    if (c.startsWith('headers.')) out.headers![c.slice(8)] ??= old.headers![c.slice(8)];
    else out[c] ??= old[c];
  }
  if (out.headers && !Object.keys(out.headers).length) delete out.headers;
  return out;
}

/**
 * `switchyard catalog rotate-secret`: every credential of every revision, and every operator's TOTP secret (those in
 * the clear too), re-encrypted from SWITCHYARD_SECRET_KEY to SWITCHYARD_NEW_SECRET_KEY, with the audit record, in one
 * transaction (all or nothing).
 */
export async function rotateSecret(
  db: Knex,
  env: NodeJS.ProcessEnv,
  audit: ChangeAudit,
): Promise<{ revisions: number; operators: number; note: string }> {
  const from = secretKey(env.SWITCHYARD_SECRET_KEY);
  const to = secretKey(env.SWITCHYARD_NEW_SECRET_KEY, 'SWITCHYARD_NEW_SECRET_KEY');
  if (!from || !to) throw new SecretKeyError('set SWITCHYARD_SECRET_KEY (the key now) and SWITCHYARD_NEW_SECRET_KEY');
  let operators = 0;
  const rewrite = (text: string) => JSON.stringify(seal(open(parseDocument(text), from), to));
  const revisions = await rewriteRevisions(db, rewrite, async (trx, n) => {
    operators = await resealTotpSecrets(trx, from, to);
    await recordAudit(trx, { ...audit, before: null, after: { revisions: n, operators } });
  });
  return {
    revisions,
    operators,
    note: "Done (catalog credentials and operators' TOTP secrets): now set SWITCHYARD_SECRET_KEY to the new key (and remove SWITCHYARD_NEW_SECRET_KEY) on every gateway process, and restart them",
  };
}
