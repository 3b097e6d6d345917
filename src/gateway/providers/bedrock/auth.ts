/**
 * SigV4 for Bedrock, by the AWS SDK's own signer (@smithy/signature-v4, service `bedrock`): one signer per
 * configured provider (kept in its state), with its configured keys, or — when it names none — AWS's credential
 * chain (environment, profile, SSO, web identity, instance and container roles), which caches the credentials and
 * refreshes them before they expire. Nothing here ever puts a credential in a message.
 */
import type { SignatureV4 } from '@smithy/signature-v4';
import type { ProviderConfig } from '../../../config';
import { UpstreamError } from '../../types';
import type { OutgoingRequest } from '../types';

type Credentials = { accessKeyId: string; secretAccessKey: string; sessionToken?: string };

/** The region: the setting, else AWS's own environment variables (as the AWS CLI and SDKs read them). */
export function regionOf(settings: Record<string, unknown>): string {
  const region =
    (settings.region as string | undefined) ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? undefined;
  if (!region) throw new Error('a bedrock provider needs `region` (or AWS_REGION in the environment)');
  return region;
}

function credentials(config: ProviderConfig): Credentials | (() => Promise<Credentials>) {
  const s = config.settings;
  if (typeof s.access_key_id === 'string' && typeof s.secret_access_key === 'string') {
    const token = typeof s.session_token === 'string' && s.session_token ? { sessionToken: s.session_token } : {};
    return { accessKeyId: s.access_key_id, secretAccessKey: s.secret_access_key, ...token };
  }
  const { defaultProvider } =
    require('@aws-sdk/credential-provider-node') as typeof import('@aws-sdk/credential-provider-node');
  const chain = defaultProvider(); // memoized: refreshed only when the credentials near their expiry
  return async () => {
    try {
      return await chain();
    } catch (e) {
      // The chain's messages name profiles and files, never secrets; the error's name is enough for the log.
      const why = (e as Error)?.name ?? 'error';
      throw new UpstreamError('connect', `no AWS credentials from the default chain for this provider (${why})`);
    }
  };
}

/**
 * A configured provider's signer, with its region (the configuration has refused a provider with none). The AWS
 * modules are loaded here, for the first Bedrock provider: a gateway with none never loads them (memory, start-up).
 */
export function signer(config: ProviderConfig): SignatureV4 {
  const { SignatureV4: Signer } = require('@smithy/signature-v4') as typeof import('@smithy/signature-v4');
  const { Hash } = require('@smithy/hash-node') as typeof import('@smithy/hash-node');
  return new Signer({
    service: 'bedrock',
    region: regionOf(config.settings),
    credentials: credentials(config),
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: true, // every AWS service but S3 signs the path escaped twice
  });
}

/**
 * The headers that sign one request: host, content length, date, session token and Authorization. The body's length
 * is signed (as the SDK does) so that what arrives is what was signed.
 */
export async function sign(request: OutgoingRequest, v4: SignatureV4): Promise<Record<string, string>> {
  if (typeof request.body !== 'string') throw new UpstreamError('invalid', 'bedrock signs JSON bodies only', 400);
  // Bedrock takes Anthropic's betas in the body (anthropic_beta), not as a header: nothing else reads this one.
  delete request.headers['anthropic-beta'];
  const url = new URL(request.url);
  const headers = {
    ...request.headers,
    host: url.host,
    'content-length': String(Buffer.byteLength(request.body)),
  };
  const signed = await v4.sign({
    method: request.method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers,
    body: request.body,
  });
  return signed.headers;
}
