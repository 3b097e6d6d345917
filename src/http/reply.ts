/**
 * Writes a handler's Reply: a JSON answer, or a stream of server-sent events. A stream is written frame by frame
 * as it comes, respecting back-pressure; when the client is gone (even before the stream started) the frame source
 * is closed, so its clean-up — cancelling the upstream call, settling what was used — always runs.
 */
import { PassThrough } from 'node:stream';
import type { Request, ResponseObject, ResponseToolkit } from '@hapi/hapi';
import type { Meter } from '../gateway/types';
import type { Reply } from '../handlers/types';

declare module '@hapi/hapi' {
  interface RequestApplicationState {
    /** What the request used at an upstream, for the log line. */
    meter?: () => Meter | null;
  }
}

export function writeReply(out: Reply, request: Request, h: ResponseToolkit): ResponseObject {
  let res: ResponseObject;
  request.app.meter = out.meter;
  if ('sse' in out) {
    const stream = new PassThrough();
    void pump(out.sse, stream, request);
    res = h.response(stream).type('text/event-stream').header('cache-control', 'no-cache').header('x-accel-buffering', 'no');
  } else {
    res = h.response(out.body as object).code(out.status ?? 200);
  }
  for (const k in out.headers ?? {}) res.header(k, out.headers![k]);
  return res;
}

/** Whether the client's connection closed before its answer was complete. */
export const gone = (request: Request) => {
  const res = request.raw.res;
  return !res.writableFinished && (res.destroyed || !!request.raw.req.socket?.destroyed);
};

async function pump(frames: AsyncIterable<string>, stream: PassThrough, request: Request): Promise<void> {
  const it = frames[Symbol.asyncIterator]();
  const res = request.raw.res;
  let left = gone(request);
  let wake = () => {};
  const onClose = () => {
    if (!res.writableFinished) left = true;
    wake();
  };
  res.once('close', onClose);
  try {
    for (let r = await it.next(); !r.done && !left && !stream.destroyed; r = await it.next()) {
      if (!stream.write(r.value)) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          stream.once('drain', resolve);
          if (left || stream.destroyed) resolve();
        });
        stream.removeListener('drain', wake);
      }
    }
  } catch {
    // the stream's own error event was already framed; anything else means the client is gone
  } finally {
    res.removeListener('close', onClose);
    await it.return?.()?.catch(() => undefined);
    stream.end();
  }
}
