import type { Handler } from './types';
import { sseFrames } from './sse';

/** POST /v1/completions (legacy) */
export const createCompletion: Handler<'createCompletion'> = async ({ body, principal, app, signal }) => {
  if (body.stream) {
    const stream = await app.gateway.completionStream(body, principal.key, signal);
    return { sse: sseFrames(stream.chunks), meter: stream.meter };
  }
  const answer = await app.gateway.completion(body, principal.key, signal);
  return { body: answer.body, meter: () => answer.meter };
};
