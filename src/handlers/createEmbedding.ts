import { embeddings } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/embeddings */
export const createEmbedding: Handler<'createEmbedding'> = ({ app, ...call }) => app.metered.serve(embeddings, call);
