import { metered, meteredStream } from '../billing/metered';
import { sseFrames } from './sse';
import type { Handler } from './types';

/** POST /v1/completions (legacy) */
export const createCompletion: Handler<'createCompletion'> = async ({ body, principal, app, requestId, signal }) => {
  const call = { app, principal, requestId, endpoint: 'completions' as const, body };
  if (body.stream) {
    const stream = await meteredStream(call, (b) => app.gateway.completionStream(b, principal.key, signal));
    return { sse: sseFrames(stream.chunks), headers: stream.headers, meter: stream.meter };
  }
  const answer = await metered(call, (b) => app.gateway.completion(b, principal.key, signal));
  return { body: answer.body, headers: answer.headers };
};
