/**
 * AWS's binary event-stream framing (application/vnd.amazon.eventstream), in which ConverseStream and
 * InvokeModelWithResponseStream answer: each message is a 4-byte total length, a 4-byte headers length, a CRC of
 * the prelude, the headers, the body and a CRC of the whole. `@smithy/eventstream-codec` decodes (and checks) one
 * whole message; the body's chunks split messages anywhere, so they are gathered here until a message is whole.
 */
import type { EventStreamCodec } from '@smithy/eventstream-codec';
import type { SseEvent } from '../../sse';
import { UpstreamError } from '../../types';
import { statusOfErrorType } from './errors';

let codec: EventStreamCodec | undefined;

/** The codec, made with the first Bedrock stream: a gateway with no Bedrock provider never loads the AWS modules. */
function codecOf(): EventStreamCodec {
  if (codec) return codec;
  const { EventStreamCodec: Codec } =
    require('@smithy/eventstream-codec') as typeof import('@smithy/eventstream-codec');
  const { fromUtf8, toUtf8 } = require('@smithy/util-utf8') as typeof import('@smithy/util-utf8');
  return (codec = new Codec(toUtf8, fromUtf8));
}

/** The prelude: total length (4 bytes), headers length (4), prelude CRC (4). */
const PRELUDE = 12;
/** AWS's limit on one message (16 MiB): a length above it means the stream is not event-stream framed. */
const MAX_MESSAGE = 16 * 1024 * 1024;

/**
 * Each event's type (`:event-type`) and its JSON body, as the adapters' event type. An exception message (a
 * throttlingException, a modelStreamErrorException...) ends the stream as an UpstreamError with the status Bedrock
 * gives that exception over HTTP: one that comes before anything was sent to the client falls back as such.
 */
export async function* eventStream(body: AsyncIterable<Buffer>): AsyncGenerator<SseEvent> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of body) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= PRELUDE) {
      const length = pending.readUInt32BE(0);
      if (length < PRELUDE + 4 || length > MAX_MESSAGE)
        throw new UpstreamError('protocol', 'the upstream sent a stream that is not AWS event-stream framed');
      if (pending.length < length) break;
      const message = pending.subarray(0, length);
      pending = pending.subarray(length);
      yield event(message);
    }
  }
  if (pending.length) throw new UpstreamError('protocol', 'the upstream stream ended in the middle of an event');
}

function event(bytes: Buffer): SseEvent {
  let message: ReturnType<EventStreamCodec['decode']>;
  try {
    message = codecOf().decode(bytes);
  } catch {
    throw new UpstreamError('protocol', 'the upstream sent an event-stream message that does not check out');
  }
  const header = (name: string) => {
    const h = message.headers[name];
    return h && h.type === 'string' ? h.value : undefined;
  };
  const data = Buffer.from(message.body).toString('utf8');
  const kind = header(':message-type');
  if (kind === 'event') return { event: header(':event-type') ?? '', data };
  const type = header(':exception-type') ?? header(':error-code') ?? 'error';
  let said: string | undefined;
  try {
    said = (JSON.parse(data) as { message?: string }).message;
  } catch {
    said = header(':error-message');
  }
  throw new UpstreamError('status', `the upstream reported ${type} in the stream`, statusOfErrorType(type), said);
}
