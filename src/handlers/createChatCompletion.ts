import { chat } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/chat/completions */
export const createChatCompletion: Handler<'createChatCompletion'> = ({ app, ...call }) =>
  app.metered.serve(chat, call);
