/**
 * A fake Amazon Bedrock Runtime on loopback: real HTTP, every request's SigV4 signature checked with the `aws4`
 * package (the gateway signs with the AWS SDK's signer: two implementations, so a bug in either shows), and AWS's
 * refusals in Bedrock's shape (`{"message"}` with the type in `x-amzn-errortype`): an unknown access key, a signature
 * made with another secret, an expired session token. It answers Converse, ConverseStream (binary event-stream
 * frames, encoded by @smithy/eventstream-codec and cut anywhere, in the middle of a frame too), InvokeModel and
 * InvokeModelWithResponseStream for Claude, Titan and Cohere embeddings.
 * Tests script its answers with `plan`, and read what it received from `requests`.
 */
import aws4 from 'aws4';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { FakeUpstream, type Piece, type Plan, type Received } from './fakeUpstream';
import { message, streamEvents, type Block, type Usage } from './anthropicUpstream';

export type { Plan, Received };

export const REGION = 'us-west-2';

export interface FakeCredential {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** The session token has expired: AWS answers ExpiredTokenException. */
  expired?: boolean;
}

export const KEYS: FakeCredential = {
  accessKeyId: 'AKIAFAKEBEDROCKKEY01',
  secretAccessKey: 'fake/Secret+Access/Key0123456789abcdefGHIJ',
};
export const TEMP_KEYS: FakeCredential = {
  accessKeyId: 'ASIAFAKEBEDROCKTMP01',
  secretAccessKey: 'fake/Temporary/Secret0123456789abcdefGHIJ',
  sessionToken: 'FwoGZXIvYXdzEFAKE//session+token/that/expired==',
  expired: true,
};

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** Bedrock's error answer: `{"message"}`, its type in the header. */
export function bedrockError(status: number, type: string, text: string): Plan {
  return {
    kind: 'json',
    status,
    body: { message: text },
    headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/` },
  };
}

export const throttled = () =>
  bedrockError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.');

/** One event-stream message of ConverseStream (`:event-type`), with Bedrock's padding field `p`. */
export function eventFrame(type: string, body: object): Buffer {
  const headers = {
    ':event-type': { type: 'string' as const, value: type },
    ':content-type': { type: 'string' as const, value: 'application/json' },
    ':message-type': { type: 'string' as const, value: 'event' },
  };
  return Buffer.from(codec.encode({ headers, body: fromUtf8(JSON.stringify({ ...body, p: 'abcdefghij' })) }));
}

/** An exception inside a stream (`throttlingException`, `modelStreamErrorException`...). */
export function exceptionFrame(type: string, text: string): Buffer {
  const headers = {
    ':exception-type': { type: 'string' as const, value: type },
    ':content-type': { type: 'string' as const, value: 'application/json' },
    ':message-type': { type: 'string' as const, value: 'exception' },
  };
  return Buffer.from(codec.encode({ headers, body: fromUtf8(JSON.stringify({ message: text })) }));
}

/**
 * A streamed answer of these frames, written in pieces that do not follow the frames: each frame is split in two
 * (the second half written a moment later), so the reader must gather a frame cut in the middle of a chunk.
 * `stall`: then never end (until the client leaves).
 */
export function framesPlan(frames: Buffer[], o: { stall?: boolean; cut?: boolean } = {}): Plan {
  const pieces: Piece[] = [];
  for (const f of frames) {
    const half = Math.floor(f.length / 2);
    pieces.push(f.subarray(0, half), { delayMs: 2 }, f.subarray(half), { delayMs: 2 });
  }
  if (o.stall) pieces.push({ wait: new Promise(() => {}) });
  return { kind: 'bytes', type: 'application/vnd.amazon.eventstream', pieces, cut: o.cut };
}

export const converseUsage = (input: number, output: number, more: object = {}) => ({
  inputTokens: input,
  outputTokens: output,
  totalTokens: input + output,
  ...more,
});

/** A whole Converse answer. */
export function converseAnswer(content: object[], stopReason = 'end_turn', usage: object = converseUsage(10, 3)) {
  return {
    output: { message: { role: 'assistant', content } },
    stopReason,
    usage,
    metrics: { latencyMs: 123 },
  };
}

/** ConverseStream's frames for a text answer, one delta per piece. */
export function textFrames(
  pieces: string[],
  stopReason = 'end_turn',
  usage: object = converseUsage(10, pieces.length),
) {
  return [
    eventFrame('messageStart', { role: 'assistant' }),
    ...pieces.map((text) => eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text } })),
    eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
    eventFrame('messageStop', { stopReason }),
    eventFrame('metadata', { usage, metrics: { latencyMs: 99 } }),
  ];
}

/** InvokeModelWithResponseStream's frames: each Anthropic event base64 in a `chunk` event's `bytes`. */
export function anthropicFrames(events: object[]): Buffer[] {
  return events.map((ev) => eventFrame('chunk', { bytes: Buffer.from(JSON.stringify(ev)).toString('base64') }));
}

/** A deterministic vector for a text, `dims` long. */
export function fakeVector(text: string, dims = 4): number[] {
  return Array.from({ length: dims }, (_, i) => ((text.length + i) % 8) / 8 - 0.5);
}

export class FakeBedrock extends FakeUpstream {
  constructor(credentials: FakeCredential[] = [KEYS, TEMP_KEYS]) {
    super({
      base: '',
      defaultPlan,
      check: (r) => checkSignature(r, credentials),
      frame: () => '',
      headers: (n) => ({ 'x-amzn-requestid': `fake-request-${n}` }),
    });
  }
}

/** AWS's answer to a request it cannot authenticate; null when the signature checks out. */
export function checkSignature(r: Received, credentials: FakeCredential[]): Plan | null {
  const auth = String(r.headers.authorization ?? '');
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (!m) return bedrockError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  const [, keyId, , region, service, signedHeaders, signature] = m;
  const cred = credentials.find((c) => c.accessKeyId === keyId);
  const token = r.headers['x-amz-security-token'];
  if (!cred || (cred.sessionToken ?? undefined) !== (token ?? undefined))
    return bedrockError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
  if (cred.expired)
    return bedrockError(403, 'ExpiredTokenException', 'The security token included in the request is expired');
  if (region !== REGION || service !== 'bedrock')
    return bedrockError(403, 'InvalidSignatureException', `Credential should be scoped to a valid region and service.`);
  const names = signedHeaders.split(';');
  for (const required of ['host', 'x-amz-date', 'content-length'])
    if (!names.includes(required))
      return bedrockError(403, 'InvalidSignatureException', `'${required}' must be a signed header.`);
  const headers: Record<string, string> = {};
  for (const h of names) headers[h] = String(r.headers[h] ?? '');
  const expected = aws4.sign(
    { method: r.method, host: headers.host, path: r.path, headers, body: r.raw, service: 'bedrock', region },
    { accessKeyId: cred.accessKeyId, secretAccessKey: cred.secretAccessKey, sessionToken: cred.sessionToken },
  );
  const got = /Signature=([0-9a-f]{64})/.exec(String((expected.headers as Record<string, string>).Authorization))?.[1];
  if (got !== signature)
    return bedrockError(
      403,
      'InvalidSignatureException',
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
    );
  return null;
}

function lastUserText(body: any): string {
  const m = [...(body.messages ?? [])].reverse().find((x: any) => x.role === 'user');
  const content = typeof m?.content === 'string' ? [{ text: m.content }] : (m?.content ?? []);
  return content.map((b: any) => b.text ?? '').join('');
}

/** What the fake answers by default: the user's words echoed back, usage counted as words. */
export function defaultPlan(r: Received): Plan {
  const m = /^\/model\/([^/]+)\/([a-z-]+)$/.exec(r.path);
  if (!m) return bedrockError(404, 'UnknownOperationException', 'Unknown operation');
  const [, id, action] = m;
  const model = decodeURIComponent(id);
  const body = r.body ?? {};
  const echo = `Echo: ${lastUserText(body)}`;
  switch (action) {
    case 'converse':
      return {
        kind: 'json',
        body: converseAnswer([{ text: echo }], 'end_turn', converseUsage(10, echo.split(' ').length)),
      };
    case 'converse-stream':
      return framesPlan(textFrames(echo.split(/(?= )/)));
    case 'invoke':
      return invoke(model, body);
    case 'invoke-with-response-stream': {
      const bad = claudeChecks(body);
      if (bad) return bad;
      return framesPlan(anthropicFrames(streamEvents(claudeMessage([{ type: 'text', text: echo }], model))));
    }
    default:
      return bedrockError(404, 'UnknownOperationException', 'Unknown operation');
  }
}

export function claudeMessage(content: Block[], model: string, usage?: Usage) {
  return message(content, { model, ...(usage ? { usage } : {}) });
}

/** What Bedrock checks in a Claude InvokeModel body that a translation bug would trip. */
function claudeChecks(body: any): Plan | null {
  if (body.anthropic_version !== 'bedrock-2023-05-31')
    return bedrockError(400, 'ValidationException', 'invalid anthropic_version');
  for (const key of ['model', 'stream', 'service_tier'])
    if (key in body) return bedrockError(400, 'ValidationException', `extraneous key [${key}] is not permitted`);
  return null;
}

function invoke(model: string, body: any): Plan {
  if (model.includes('titan-embed')) {
    const text = String(body.inputText ?? '');
    return {
      kind: 'json',
      body: { embedding: fakeVector(text, body.dimensions ?? 4), inputTextTokenCount: text.split(' ').length },
    };
  }
  if (model.includes('cohere.embed')) {
    const texts: string[] = body.texts ?? [];
    if (!body.input_type) return bedrockError(400, 'ValidationException', 'input_type is required');
    return {
      kind: 'json',
      body: { id: 'emb-1', response_type: 'embeddings_floats', texts, embeddings: texts.map((t) => fakeVector(t)) },
    };
  }
  const bad = claudeChecks(body);
  if (bad) return bad;
  const text = `Echo: ${lastUserText(body)}`;
  return {
    kind: 'json',
    body: {
      ...claudeMessage([{ type: 'text', text }], model),
      'amazon-bedrock-invocationMetrics': { inputTokenCount: 10, outputTokenCount: 3 },
    },
  };
}
