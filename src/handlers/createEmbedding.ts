import type { Handler } from './types';

/** POST /v1/embeddings */
export const createEmbedding: Handler<'createEmbedding'> = async ({ body, principal, app, signal }) => ({
  body: await app.gateway.embeddings(body, principal.key, signal),
});
