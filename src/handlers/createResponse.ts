import { errors } from '../errors';
import { BodyError, inspect } from '../gateway/bound';
import { responses } from '../gateway/operations';
import { derived } from '../gateway/splice';
import type { ResponseObject } from '../gateway/types';
import type { Handler } from './types';

/**
 * POST /v1/responses (OpenAI's Responses API). A continued conversation is sent whole, so it is measured whole
 * (the hold covers the earlier turns too, and what the gateway cannot forward is a 400 here as in the request's
 * own body); the answer is kept for the account unless `store` is false.
 */
export const createResponse: Handler<'createResponse'> = async ({ app, body, ...call }) => {
  const accountId = call.principal.accountId;
  const { body: whole, input } = await app.responses.withHistory(accountId, body);
  derived(whole, body); // its input replaced: the rest still goes as the client's bytes (gateway/splice.ts)
  return app.metered.serve(responses, {
    ...call,
    body: whole,
    // the same input (no earlier turns, input already a list): the request's own measure is the whole body's
    profile: whole.input === body.input ? call.profile : measured(whole),
    onAnswer: (res) => app.responses.keep(accountId, body, input, res as ResponseObject),
  });
};

function measured(body: unknown) {
  try {
    return inspect(body);
  } catch (e) {
    throw e instanceof BodyError ? errors.invalidRequest(e.message, e.param) : e;
  }
}
