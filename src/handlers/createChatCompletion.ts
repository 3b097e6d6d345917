import { metered, meteredStream } from '../billing/metered';
import { sseFrames } from './sse';
import type { Handler } from './types';

/** POST /v1/chat/completions */
export const createChatCompletion: Handler<'createChatCompletion'> = async ({ body, principal, app, requestId, signal }) => {
  const call = { app, principal, requestId, endpoint: 'chat' as const, body };
  if (body.stream) {
    const stream = await meteredStream(call, (b) => app.gateway.chatStream(b, principal.key, signal));
    return { sse: sseFrames(stream.chunks), headers: stream.headers, meter: stream.meter };
  }
  const answer = await metered(call, (b) => app.gateway.chat(b, principal.key, signal));
  return { body: answer.body, headers: answer.headers };
};
