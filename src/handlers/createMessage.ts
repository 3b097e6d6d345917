import { messages } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/messages (Anthropic's Messages API) */
export const createMessage: Handler<'createMessage'> = ({ app, ...call }) => app.metered.serve(messages, call);
