import { completions } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/completions (legacy) */
export const createCompletion: Handler<'createCompletion'> = ({ app, ...call }) => app.metered.serve(completions, call);
