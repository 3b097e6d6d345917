import { withHeaders } from '../services/metered';
import type { Handler } from './types';

/** GET /v1/responses/{response_id}: a response this account stored; another account's is a 404. */
export const retrieveResponse: Handler<'retrieveResponse'> = async ({ app, params, principal, grant }) => {
  try {
    return { body: await app.responses.find(principal.accountId, params.response_id), headers: grant.headers };
  } catch (e) {
    throw withHeaders(e, grant);
  }
};
