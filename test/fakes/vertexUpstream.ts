/**
 * A fake Google Vertex AI on loopback, in two real HTTP servers:
 * - FakeGoogleAuth, the OAuth token endpoint a service account key names in `token_uri`: it checks that the JWT
 *   assertion is signed by a known service account's key (RS256, verified with node:crypto against the public key
 *   the test made), addressed to Google's token URL, for the cloud-platform scope and not expired, and issues
 *   short-lived opaque access tokens. A revoked account is refused as Google refuses one (400 invalid_grant).
 * - FakeVertex, the data plane: every call must carry a Bearer token the auth fake issued and that has not expired
 *   (else 401 UNAUTHENTICATED). It serves `/v1/projects/{p}/locations/{l}/publishers/google/models/{m}` with
 *   `:generateContent`, `:streamGenerateContent?alt=sse` (answered as the Gemini fake answers) and `:predict`
 *   (embeddings, with their token counts), and `.../publishers/anthropic/models/{m}` with `:rawPredict` and
 *   `:streamRawPredict` (answered as the Anthropic fake answers), checking what Vertex checks: the model in the URL
 *   and not in the body, `anthropic_version: vertex-2023-10-16`.
 * Tests script answers with `plan` (Gemini events and Anthropic events, each framed as its publisher frames it).
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultPlan as anthropicPlan, errorBody, sse as anthropicFrame } from './anthropicUpstream';
import { FakeUpstream, type Plan, type Received } from './fakeUpstream';
import { defaultPlan as geminiPlan, fakeVector, geminiError } from './geminiUpstream';

export type { Plan, Received };

export const PROJECT = 'switchyard-test';
export const LOCATION = 'us-east5';
/** The audience Google expects in every assertion, whatever the key's token_uri. */
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/** A service account key file, as the Cloud console downloads it. */
export interface ServiceAccountKey {
  type: 'service_account';
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  token_uri: string;
}

interface Account {
  publicKey: crypto.KeyObject;
  revoked: boolean;
  /** Seconds each of its tokens lives. */
  lifetime: number;
}

/** A token request as the fake saw it: whose, and whether it was granted. */
export interface TokenRequest {
  email: string | null;
  granted: boolean;
}

const b64json = (s: string) => JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));

export class FakeGoogleAuth {
  readonly requests: TokenRequest[] = [];
  /** Delay before each answer (requests that wait for a token meanwhile must share one). */
  delayMs = 0;
  /** Bearer tokens refused by the data plane because they had expired. */
  expiredSeen = 0;
  private readonly accounts = new Map<string, Account>();
  private readonly tokens = new Map<string, { email: string; expiresAt: number }>();
  private server!: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/token`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** A new service account with a fresh RSA key pair; `tokenUri` defaults to this endpoint. */
  newServiceAccount(name: string, o: { lifetime?: number; tokenUri?: string } = {}): ServiceAccountKey {
    const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const email = `${name}@${PROJECT}.iam.gserviceaccount.com`;
    this.accounts.set(email, { publicKey, revoked: false, lifetime: o.lifetime ?? 3600 });
    return {
      type: 'service_account',
      project_id: PROJECT,
      private_key_id: crypto.randomBytes(20).toString('hex'),
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: email,
      client_id: String(crypto.randomInt(1e9)),
      token_uri: o.tokenUri ?? this.url,
    };
  }

  /** The account's keys are deleted or the account disabled: its assertions are refused from now on. */
  revoke(email: string): void {
    this.accounts.get(email)!.revoked = true;
  }

  requestsOf(email: string): TokenRequest[] {
    return this.requests.filter((r) => r.email === email);
  }

  /** Whether a data-plane call may go on with this Authorization header. */
  allows(authorization: string | undefined): boolean {
    const t = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    const known = t ? this.tokens.get(t) : undefined;
    if (!known) return false;
    if (Date.now() >= known.expiresAt) {
      this.expiredSeen++;
      return false;
    }
    return !this.accounts.get(known.email)!.revoked;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const answer = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    };
    const refuse = (email: string | null, description: string) => {
      this.requests.push({ email, granted: false });
      answer(400, { error: 'invalid_grant', error_description: description });
    };
    if (req.method !== 'POST' || form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      this.requests.push({ email: null, granted: false });
      return answer(400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type: ' });
    }
    const [h, p, sig] = (form.get('assertion') ?? '').split('.');
    let header: { alg?: string };
    let claims: { iss?: string; aud?: string; scope?: string; iat?: number; exp?: number };
    try {
      header = b64json(h);
      claims = b64json(p);
    } catch {
      return refuse(null, 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
    }
    const email = claims.iss ?? null;
    const account = email ? this.accounts.get(email) : undefined;
    if (!account) return refuse(email, 'Invalid grant: account not found');
    const signed = crypto.verify(
      'RSA-SHA256',
      Buffer.from(`${h}.${p}`),
      account.publicKey,
      Buffer.from(sig ?? '', 'base64url'),
    );
    if (header.alg !== 'RS256' || !signed || account.revoked) return refuse(email, 'Invalid JWT Signature.');
    const now = Math.floor(Date.now() / 1000);
    if (claims.aud !== GOOGLE_TOKEN_URL || !(claims.scope ?? '').split(' ').includes(SCOPE))
      return refuse(email, 'Invalid JWT: audience or scope');
    if (!claims.exp || claims.exp <= now || !claims.iat || claims.iat > now + 60 || claims.exp - claims.iat > 3600)
      return refuse(
        email,
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.',
      );
    const token = `ya29.fake-${crypto.randomBytes(16).toString('base64url')}`;
    this.tokens.set(token, { email: email!, expiresAt: Date.now() + account.lifetime * 1000 });
    this.requests.push({ email, granted: true });
    answer(200, { access_token: token, expires_in: account.lifetime, token_type: 'Bearer' });
  }
}

const PATH =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:?]+):(\w+)(\?.*)?$/;

export class FakeVertex extends FakeUpstream {
  constructor(readonly auth: FakeGoogleAuth) {
    super({
      base: '',
      defaultPlan: (r) => answer(r),
      check: (r) => check(auth, r),
      // Anthropic's events carry their type (`event: <type>` lines); Gemini's are bare `data:` lines.
      frame: (ev) => {
        const type = (ev as { type?: unknown }).type;
        return typeof type === 'string'
          ? anthropicFrame({ ...(ev as object), type })
          : `data: ${JSON.stringify(ev)}\r\n\r\n`;
      },
      jsonType: 'application/json; charset=UTF-8',
    });
  }
}

/** Google's error body on Vertex. */
export const vertexError = (code: number, status: string, message: string) => geminiError(code, status, message);

/** What Vertex refuses before any model sees the request. */
function check(auth: FakeGoogleAuth, r: Received): Plan | null {
  if (!auth.allows(r.headers.authorization as string | undefined)) {
    const message =
      'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.';
    return { kind: 'json', status: 401, body: vertexError(401, 'UNAUTHENTICATED', message) };
  }
  const m = PATH.exec(r.path);
  if (!m || m[1] !== PROJECT || m[2] !== LOCATION) {
    return { kind: 'json', status: 404, body: vertexError(404, 'NOT_FOUND', 'Requested entity was not found.') };
  }
  const [, , , publisher, , method] = m;
  if (publisher !== 'anthropic') return null;
  const fail = (message: string): Plan => ({
    kind: 'json',
    status: 400,
    body: errorBody('invalid_request_error', message),
  });
  if (method !== 'rawPredict' && method !== 'streamRawPredict') return fail(`Unsupported method ${method}`);
  const b = r.body ?? {};
  if (b.anthropic_version !== 'vertex-2023-10-16') return fail('anthropic_version: Input should be vertex-2023-10-16');
  if ('model' in b) return fail('model: Extra inputs are not permitted');
  if ((b.stream === true) !== (method === 'streamRawPredict')) return fail('stream: must match the method');
  if (!Number.isInteger(b.max_tokens) || b.max_tokens < 1) return fail('max_tokens: Field required');
  if (!Array.isArray(b.messages) || !b.messages.length) return fail('messages: at least one message is required');
  return null;
}

/** The default answers: Gemini's and Anthropic's fakes' echoes, embeddings with a token count per text. */
function answer(r: Received): Plan {
  const [, , , publisher, model, method, query = ''] = PATH.exec(r.path)!;
  if (publisher === 'anthropic')
    return anthropicPlan({ ...r, path: '/v1/messages', body: { ...r.body, model } }) as Plan;
  if (method !== 'predict') return geminiPlan({ ...r, path: `/v1beta/models/${model}:${method}${query}` });
  const instances: { content: string }[] = r.body?.instances ?? [];
  const dims = r.body?.parameters?.outputDimensionality ?? 4;
  const predictions = instances.map((i) => ({
    embeddings: {
      values: fakeVector(i.content, dims),
      statistics: { token_count: i.content.split(' ').length, truncated: false },
    },
  }));
  return { kind: 'json', body: { predictions, metadata: { billableCharacterCount: 10 } } };
}
