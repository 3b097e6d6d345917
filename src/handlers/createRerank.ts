import { rerank } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/rerank */
export const createRerank: Handler<'createRerank'> = ({ app, ...call }) => app.metered.serve(rerank, call);
