import type { Handler } from './types';

/** POST /v1/embeddings */
export const createEmbedding: Handler<'createEmbedding'> = async ({ body, principal, app, signal }) => {
  const answer = await app.gateway.embeddings(body, principal.key, signal);
  return { body: answer.body, meter: () => answer.meter };
};
