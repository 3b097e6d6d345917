import { moderations } from '../gateway/operations';
import { withModel } from '../gateway/operations/moderations';
import type { Handler } from './types';

/** POST /v1/moderations (a request that names no model asks for OpenAI's default, as at OpenAI). */
export const createModeration: Handler<'createModeration'> = ({ app, body, ...call }) =>
  app.metered.serve(moderations, { ...call, body: withModel(body) });
