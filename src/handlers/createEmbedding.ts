import { metered } from '../billing/metered';
import type { Handler } from './types';

/** POST /v1/embeddings */
export const createEmbedding: Handler<'createEmbedding'> = async ({ body, principal, app, requestId, signal }) => {
  const answer = await metered({ app, principal, requestId, endpoint: 'embeddings', body }, (b) => app.gateway.embeddings(b, principal.key, signal));
  return { body: answer.body, headers: answer.headers };
};
