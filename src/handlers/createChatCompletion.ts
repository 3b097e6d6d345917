import type { Handler } from './types';
import { sseFrames } from './sse';

/** POST /v1/chat/completions */
export const createChatCompletion: Handler<'createChatCompletion'> = async ({ body, principal, app, signal }) => {
  if (body.stream) {
    const stream = await app.gateway.chatStream(body, principal.key, signal);
    return { sse: sseFrames(stream.chunks) };
  }
  return { body: await app.gateway.chat(body, principal.key, signal) };
};
