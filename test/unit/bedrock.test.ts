/** The bedrock provider's pure parts: event-stream framing across any chunking, and how Bedrock's errors are read. */
import { eventStream } from '../../src/gateway/providers/bedrock/eventstream';
import { readError } from '../../src/gateway/providers/bedrock/errors';
import { UpstreamError } from '../../src/gateway/types';
import { eventFrame, exceptionFrame, textFrames } from '../fakes/bedrockUpstream';

async function* chunks(bytes: Buffer, size: number) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function read(source: AsyncIterable<Buffer>) {
  const out: { event: string; data: any }[] = [];
  for await (const ev of eventStream(source)) out.push({ event: ev.event, data: JSON.parse(ev.data) });
  return out;
}

describe('event-stream framing', () => {
  const bytes = Buffer.concat(textFrames(['a', 'b']));

  test.each([1, 3, 7, 16, 64, 1000, bytes.length])('the same events whatever the chunk size (%i bytes)', async (n) => {
    const events = await read(chunks(bytes, n));
    expect(events.map((e) => e.event)).toEqual([
      'messageStart',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockStop',
      'messageStop',
      'metadata',
    ]);
    expect(events[1].data).toMatchObject({ contentBlockIndex: 0, delta: { text: 'a' } });
  });

  test('an exception message ends the stream with the status Bedrock gives it over HTTP', async () => {
    const e = await read(
      chunks(Buffer.concat([eventFrame('messageStart', {}), exceptionFrame('throttlingException', 'slow down')]), 5),
    ).catch((x) => x);
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e).toMatchObject({ reason: 'status', status: 429, upstreamMessage: 'slow down' });
  });

  test('a stream cut inside a frame, a corrupted frame or bytes that are not framed are protocol errors', async () => {
    const frame = eventFrame('messageStart', {});
    const corrupt = Buffer.from(frame);
    corrupt[corrupt.length - 6] ^= 0xff; // the body changed: the message CRC no longer matches
    for (const bad of [frame.subarray(0, frame.length - 1), corrupt, Buffer.from('{"message":"not framed at all"}')]) {
      const e = await read(chunks(bad, 4)).catch((x) => x);
      expect(e).toBeInstanceOf(UpstreamError);
      expect(e.reason).toBe('protocol');
    }
  });
});

describe("Bedrock's errors", () => {
  const type = (t: string) => ({ 'x-amzn-errortype': `${t}:http://internal.amazon.com/coral/com.amazon.bedrock/` });

  test('throttling is a 429 and validation a 400 with the message, whatever status carried them', () => {
    expect(readError({ message: 'wait' }, 400, type('ThrottlingException'))).toEqual({
      status: 429,
      message: 'wait',
      code: 'ThrottlingException',
    });
    expect(readError({ message: 'bad' }, 400, type('ValidationException'))).toMatchObject({
      status: 400,
      message: 'bad',
    });
    expect(readError({ __type: 'com.amazon.coral#ValidationException', message: 'x' }, 400, {})).toMatchObject({
      code: 'ValidationException',
    });
  });

  test("a refused credential names the setting to fix and passes none of AWS's words to the caller", () => {
    const info = readError(
      { message: 'The request signature we calculated does not match' },
      403,
      type('InvalidSignatureException'),
    );
    expect(info).toEqual({ status: 403, message: undefined, code: expect.stringContaining('secret_access_key') });
    expect(readError({ message: 'expired' }, 403, type('ExpiredTokenException')).code).toContain('session_token');
    expect(readError({ message: 'invalid' }, 403, type('UnrecognizedClientException')).code).toContain('access_key_id');
  });
});
