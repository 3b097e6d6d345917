import type { Handler } from './types';
import { sseFrames } from './sse';

/** POST /v1/chat/completions */
export const createChatCompletion: Handler<'createChatCompletion'> = async ({ body, principal, app, signal }) => {
  if (body.stream) {
    const stream = await app.gateway.chatStream(body, principal.key, signal);
    return { sse: sseFrames(stream.chunks), meter: stream.meter };
  }
  const answer = await app.gateway.chat(body, principal.key, signal);
  return { body: answer.body, meter: () => answer.meter };
};
