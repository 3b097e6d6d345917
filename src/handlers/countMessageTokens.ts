import { messages } from '../gateway/operations';
import type { MessagesRequest } from '../gateway/types';
import type { Handler } from './types';

/** POST /v1/messages/count_tokens: free; Anthropic counts for an anthropic route, the tokenizer estimates otherwise. */
export const countMessageTokens: Handler<'countMessageTokens'> = async ({
  app,
  principal,
  grant,
  body,
  profile,
  client,
  headers,
}) => ({
  body: await app.metered.countTokens(messages, {
    principal,
    grant,
    body: body as MessagesRequest,
    profile,
    client,
    headers,
  }),
});
