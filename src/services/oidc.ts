/**
 * OpenID Connect for operators, the protocol half (oidcSignIn.ts decides who that makes the user here): the
 * authorization code flow with PKCE (S256), state and nonce, through openid-client — a certified relying party, so
 * that the ID token's signature, issuer, audience, expiry and nonce, the `iss` of the answer (mix-up attacks) and the
 * PKCE verifier are all checked by code written for exactly that.
 *
 * What checks the provider's answer (state, nonce, PKCE verifier, the redirect URI used) stays on the server, in a
 * row keyed by the SHA-256 of a random `sy_oidc` cookie of the browser that started the sign-in: an answer is only
 * taken from that browser (a stranger's callback link signs nobody in as the stranger), once (the row is deleted as
 * it is read), within 10 minutes. Nothing of it is in the cookie, so no key is needed to sign or encrypt one.
 *
 * The provider's configuration (discovery) is read once and kept; while it cannot be read, sign-in answers a 503
 * and the next one tries again: a provider down at start-up does not stop the gateway.
 */
import crypto from 'node:crypto';
import { sha256Hex } from '../digest';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type * as OpenId from 'openid-client';
import type { OidcConfig } from '../config';
import { ApiError, errors } from '../errors';

export const OIDC_COOKIE = 'sy_oidc';
export const OIDC_START_PATH = '/admin/api/session/oidc';
export const OIDC_CALLBACK_PATH = '/admin/api/session/oidc/callback';
const LOGIN_MS = 10 * 60_000;
const ID_FORMAT = /^[A-Za-z0-9_-]{43}$/;
/** Seconds the provider has to answer each request (discovery, token, userinfo). */
const TIMEOUT_S = 10;

let lib: typeof OpenId | undefined;
/**
 * openid-client is an ES module only: required when first needed (Node 20.19+ loads ES modules with require; jest
 * compiles it, see jest.config.js), so that a gateway without OpenID Connect never loads it.
 */
const openid = (): typeof OpenId => (lib ??= require('openid-client') as typeof OpenId);

/** The `sy_oidc` cookie: sent back with the provider's redirect (a top-level GET from another site: SameSite=Lax). */
export function oidcCookie(id: string, secure: boolean): string {
  return `${OIDC_COOKIE}=${id}; Max-Age=${LOGIN_MS / 1000}; Path=${OIDC_START_PATH}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** What the provider vouched for about the user: from the ID token, and from userinfo what the ID token left out. */
export interface OidcClaims {
  issuer: string;
  subject: string;
  email: string | null;
  /** The provider's `email_verified`; null when it does not say. */
  emailVerified: boolean | null;
  /** The groups claim (`admin.oidc.groups_claim`): a list, or one group as a string; none: empty. */
  groups: string[];
}

interface PendingLogin {
  state: string;
  nonce: string;
  code_verifier: string;
  redirect_uri: string;
  expires_at: number;
}

export class OidcSignIn {
  #discovered: Promise<OpenId.Configuration> | null = null;

  constructor(
    readonly settings: OidcConfig,
    private readonly log: Logger,
  ) {}

  /** The provider's configuration, read once (discovery) and kept; a failed read is tried again at the next call. */
  configuration(): Promise<OpenId.Configuration> {
    this.#discovered ??= this.discover().catch((e) => {
      this.#discovered = null;
      throw e;
    });
    return this.#discovered;
  }

  private async discover(): Promise<OpenId.Configuration> {
    const { issuer, client_id, client_secret } = this.settings;
    const oc = openid();
    const url = new URL(issuer);
    try {
      const config = await oc.discovery(url, client_id, client_secret, undefined, {
        timeout: TIMEOUT_S,
        // plain HTTP only to a provider on a loopback address (the configuration's schema allows nothing else)
        ...(url.protocol === 'http:' && { execute: [oc.allowInsecureRequests] }),
      });
      this.log.info({ issuer }, 'OpenID provider discovered: operators may sign in with it');
      return config;
    } catch (e) {
      this.log.warn({ issuer, err: reason(e) }, 'the OpenID provider cannot be reached; sign-in with it answers 503');
      throw errors.oidcUnavailable();
    }
  }

  /** Starts a sign-in: the provider's authorization URL to send the browser to, and the value of its `sy_oidc` cookie. */
  async start(db: Knex, redirectUri: string, now = Date.now()): Promise<{ location: string; cookie: string }> {
    const oc = openid();
    const config = await this.configuration();
    const cookie = crypto.randomBytes(32).toString('base64url');
    const pending = {
      state: oc.randomState(),
      nonce: oc.randomNonce(),
      code_verifier: oc.randomPKCECodeVerifier(),
      redirect_uri: redirectUri,
    };
    await db('operator_oidc_logins').insert({
      id_hash: sha256Hex(cookie),
      ...pending,
      created_at: now,
      expires_at: now + LOGIN_MS,
    });
    if (Math.random() < 0.05) void purgeExpired(db, now);
    const location = oc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.settings.scopes.join(' '),
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await oc.calculatePKCECodeChallenge(pending.code_verifier),
      code_challenge_method: 'S256',
    });
    return { location: location.href, cookie };
  }

  /**
   * Checks the provider's answer (the callback's query) against the sign-in this browser started (`cookie`), trades
   * the code for tokens, verifies the ID token, and reads the user's claims. Throws the 400 or 503 the browser gets.
   */
  async verify(db: Knex, cookie: string | undefined, params: URLSearchParams): Promise<OidcClaims> {
    const pending = await takePending(db, cookie);
    if (!pending || pending.expires_at <= Date.now()) throw errors.oidcExpired();
    if (params.get('state') !== pending.state) throw errors.oidcStateMismatch();
    const refused = params.get('error');
    if (refused !== null) throw errors.oidcRefused(refused.replace(/[^\w.-]/g, '').slice(0, 64) || 'error');
    try {
      const oc = openid();
      const config = await this.configuration();
      const url = new URL(pending.redirect_uri);
      url.search = params.toString();
      const tokens = await oc.authorizationCodeGrant(
        config,
        url,
        { pkceCodeVerifier: pending.code_verifier, expectedState: pending.state, expectedNonce: pending.nonce },
        { redirect_uri: pending.redirect_uri },
      );
      const id = tokens.claims();
      if (!id) throw errors.oidcFailed('no ID token');
      return await this.claims(config, id, tokens.access_token);
    } catch (e) {
      throw this.failure(e);
    }
  }

  /**
   * The user's claims: the ID token's, and — when it lacks the email or the groups, as providers that keep the ID
   * token small do — the userinfo endpoint's (whose subject must be the ID token's).
   */
  private async claims(config: OpenId.Configuration, id: OpenId.IDToken, accessToken: string): Promise<OidcClaims> {
    const claim = this.settings.groups_claim;
    let all: Record<string, unknown> = id;
    if ((typeof id.email !== 'string' || id[claim] === undefined) && config.serverMetadata().userinfo_endpoint)
      all = { ...(await openid().fetchUserInfo(config, accessToken, id.sub)), ...id };
    const groups = all[claim];
    return {
      issuer: id.iss,
      subject: id.sub,
      email: typeof all.email === 'string' ? all.email : null,
      emailVerified: typeof all.email_verified === 'boolean' ? all.email_verified : null,
      groups: Array.isArray(groups)
        ? groups.filter((g): g is string => typeof g === 'string')
        : typeof groups === 'string'
          ? [groups]
          : [],
    };
  }

  /** What a failure of the exchange with the provider is to the browser: unreachable (503), or not verified (400). */
  private failure(e: unknown): ApiError {
    if (e instanceof ApiError) return e;
    const code = (e as { code?: string }).code;
    if (e instanceof TypeError || code === 'OAUTH_TIMEOUT' || code === 'OAUTH_ABORT') {
      this.log.warn({ err: reason(e) }, 'the OpenID provider cannot be reached');
      return errors.oidcUnavailable();
    }
    const oc = openid();
    if (e instanceof oc.ResponseBodyError) return errors.oidcFailed(e.error);
    return errors.oidcFailed(reason(e));
  }
}

/** The sign-in a `sy_oidc` cookie started, taken once: two callbacks racing with one cookie, one gets it. */
async function takePending(db: Knex, cookie: string | undefined): Promise<PendingLogin | null> {
  if (!cookie || !ID_FORMAT.test(cookie)) return null;
  const idHash = sha256Hex(cookie);
  const row = await db('operator_oidc_logins').where('id_hash', idHash).first();
  if (!row || (await db('operator_oidc_logins').where('id_hash', idHash).del()) !== 1) return null;
  return { ...row, expires_at: Number(row.expires_at) };
}

function purgeExpired(db: Knex, now: number): Promise<unknown> {
  return db('operator_oidc_logins')
    .where('expires_at', '<', now)
    .del()
    .catch(() => undefined);
}

/** An error of openid-client, said in a few words: its cause's message when it has one (which claim failed). */
function reason(e: unknown): string {
  const cause = (e as { cause?: unknown }).cause;
  const text = cause instanceof Error ? cause.message : e instanceof Error ? e.message : String(e);
  return text.slice(0, 200);
}
