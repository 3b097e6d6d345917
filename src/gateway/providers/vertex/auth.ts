/**
 * Vertex AI's credentials: a service account's key (a file, or its JSON given inline), exchanged for an OAuth access
 * token by google-auth-library (it signs the JWT assertion and posts it to the token endpoint). The token is kept and
 * used until shortly before it expires; it is renewed ahead of that, in the background, while the old one still
 * serves; every request that finds no usable token waits for the same single exchange.
 *
 * Secrets: the private key, the signed assertion (a credential in itself) and the access token never leave this
 * module except as the Authorization header. Failures name the provider and the service account (its email and key
 * id, both public), never the key, and never the library's error objects, whose request options hold the assertion.
 */
import { readFileSync } from 'node:fs';
import type { JWT, Credentials } from 'google-auth-library';
import { UpstreamError } from '../../types';
import { str } from '../shared';

/** The scope Vertex AI's data plane accepts. */
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** Where google-auth-library always posts the assertion; a key's own `token_uri` replaces it (see redirect). */
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
/** Google's tokens live an hour: renew five minutes ahead (a quarter of the lifetime for shorter ones). */
const RENEW_AHEAD_MS = 5 * 60_000;

interface ServiceAccount {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri: string;
}

interface Token {
  value: string;
  /** From then on a renewal starts (in the background while the token is still usable). */
  renewAt: number;
  /** After this it is not sent any more: it could expire on its way. */
  usableUntil: number;
}

export class AccessTokens {
  private token: Token | null = null;
  private renewing: Promise<string> | null = null;
  private account: ServiceAccount | null = null;

  /** `credentials`: a path to the key file, or the key's JSON. `timeoutMs`: the longest one exchange may take. */
  constructor(
    private readonly provider: string,
    private readonly credentials: string,
    private readonly timeoutMs: number,
  ) {}

  /** A token to send now: the kept one, or the one the exchange under way (or a new one) brings. */
  async get(): Promise<string> {
    const t = this.token;
    const now = Date.now();
    if (t && now < t.usableUntil) {
      // Renew ahead: this request does not wait, and a failed renewal is tried again by the next one.
      if (now >= t.renewAt) this.renew().catch(() => undefined);
      return t.value;
    }
    return this.renew();
  }

  /** Vertex refused the token (revoked, or the account changed): the next call exchanges again. */
  forget(): void {
    this.token = null;
  }

  /** One exchange at a time: whoever asks while one is under way gets its result. */
  private renew(): Promise<string> {
    this.renewing ??= this.exchange().finally(() => (this.renewing = null));
    return this.renewing;
  }

  private async exchange(): Promise<string> {
    const account = (this.account ??= this.load());
    // Loaded with the first exchange: a gateway with no Vertex provider never loads google-auth-library (memory).
    const { JWT: Jwt } = require('google-auth-library') as typeof import('google-auth-library');
    const client = new Jwt({ email: account.client_email, key: account.private_key, scopes: [SCOPE] });
    redirect(client, account.token_uri, this.timeoutMs);
    let credentials: Credentials;
    try {
      credentials = await client.authorize();
    } catch (e) {
      throw this.refused(e, account);
    }
    const value = credentials.access_token;
    if (!value) throw this.failure(account, 'protocol', 'its token endpoint answered without an access token');
    const now = Date.now();
    const expiresAt = credentials.expiry_date ?? now + 3600_000;
    const ahead = Math.min(RENEW_AHEAD_MS, (expiresAt - now) / 4);
    this.token = { value, renewAt: expiresAt - ahead, usableUntil: expiresAt - ahead / 4 };
    return value;
  }

  /** The service account's key, read and checked once (again after a failure: the file may be fixed meanwhile). */
  private load(): ServiceAccount {
    const inline = this.credentials.trimStart().startsWith('{');
    let text = this.credentials;
    if (!inline) {
      try {
        text = readFileSync(this.credentials, 'utf8');
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? 'error';
        throw this.unusable(`its credentials file ${this.credentials} cannot be read (${code})`);
      }
    }
    const where = inline ? 'its credentials' : `its credentials file ${this.credentials}`;
    let key: Record<string, unknown>;
    try {
      key = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // Never the parser's message: it quotes the text, which holds the private key.
      throw this.unusable(`${where} are not JSON`);
    }
    return this.parse(key, where);
  }

  private parse(key: Record<string, unknown>, where: string): ServiceAccount {
    if (!key || typeof key !== 'object' || (key.type !== undefined && key.type !== 'service_account')) {
      throw this.unusable(`${where} are not a service account key (type ${str(key?.type) ?? 'unknown'})`);
    }
    const email = str(key.client_email);
    const privateKey = str(key.private_key);
    if (!email || !privateKey) throw this.unusable(`${where} lack client_email or private_key`);
    const tokenUri = str(key.token_uri) ?? GOOGLE_TOKEN_URL;
    if (!/^https?:\/\//.test(tokenUri)) throw this.unusable(`${where} have a token_uri that is not a URL`);
    return {
      client_email: email,
      private_key: privateKey,
      private_key_id: str(key.private_key_id),
      token_uri: tokenUri,
    };
  }

  /** Who failed, for the log line: the provider and the service account, never the key. */
  private who(account?: ServiceAccount): string {
    if (!account) return `vertex provider '${this.provider}'`;
    const id = account.private_key_id ? ` (key ${account.private_key_id.slice(0, 8)})` : '';
    return `vertex provider '${this.provider}': service account ${account.client_email}${id}`;
  }

  /** Credentials we cannot use: our configuration's fault, not the caller's (a 502, and the next route). */
  private unusable(why: string): UpstreamError {
    return new UpstreamError('status', `${this.who()}: ${why}`, 401);
  }

  private failure(account: ServiceAccount, reason: 'connect' | 'timeout' | 'protocol', why: string): UpstreamError {
    return new UpstreamError(reason, `${this.who(account)}: ${why}`);
  }

  /** google-auth-library's failure, told from its status and the OAuth error fields only. */
  private refused(e: unknown, account: ServiceAccount): UpstreamError {
    const err = e as { response?: { status?: number; data?: unknown } };
    const status = err.response?.status;
    if (status) {
      const data = (err.response?.data ?? {}) as { error?: unknown; error_description?: unknown };
      const why = [str(data.error), str(data.error_description)].filter(Boolean).join(': ').slice(0, 200);
      const detail = `HTTP ${status}${why ? `: ${why}` : ''}`;
      // A refused credential is not the caller's fault: never a 4xx of theirs. Rate limits and outages stay what they are.
      const as = status === 429 ? 429 : status >= 500 ? 502 : 401;
      return new UpstreamError('status', `${this.who(account)} was refused by its token endpoint (${detail})`, as);
    }
    const causes = chain(e);
    if (causes.some((c) => c.name === 'TimeoutError')) {
      return this.failure(account, 'timeout', `its token endpoint did not answer within ${this.timeoutMs} ms`);
    }
    const code = causes.map((c) => str(c.code)).find((c) => c && !/^\d+$/.test(c)) ?? 'error';
    return this.failure(account, 'connect', `cannot reach its token endpoint (${code})`);
  }
}

/** An error and its causes (fetch's `fetch failed` hides the system error, ECONNREFUSED, two levels down). */
function chain(e: unknown): { name?: unknown; code?: unknown }[] {
  const out: { name?: unknown; code?: unknown; cause?: unknown }[] = [];
  for (let c = e as { cause?: unknown } | undefined; c && typeof c === 'object' && out.length < 5; c = c.cause as never)
    out.push(c);
  return out;
}

/**
 * google-auth-library posts every assertion to Google's own endpoint; a key names its own (`token_uri`: a private
 * endpoint, another universe, a test's fake). No retries: a failure goes to the router, which tries the next route,
 * and the next request exchanges again. A time limit, so that a silent endpoint cannot hold requests.
 */
function redirect(client: JWT, tokenUri: string, timeoutMs: number): void {
  client.transporter.interceptors.request.add({
    resolved: async (opts) => {
      if (String(opts.url) === GOOGLE_TOKEN_URL) opts.url = new URL(tokenUri);
      opts.retryConfig = { ...opts.retryConfig, retry: 0, noResponseRetries: 0 };
      opts.signal = AbortSignal.timeout(timeoutMs);
      // Node's own fetch: gaxios would otherwise load node-fetch through a dynamic import, on the first exchange.
      opts.fetchImplementation = fetch;
      return opts;
    },
  });
}
