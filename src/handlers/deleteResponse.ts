import { withHeaders } from '../services/metered';
import type { Handler } from './types';

/** DELETE /v1/responses/{response_id} */
export const deleteResponse: Handler<'deleteResponse'> = async ({ app, params, principal, grant }) => {
  try {
    return { body: await app.responses.forget(principal.accountId, params.response_id), headers: grant.headers };
  } catch (e) {
    throw withHeaders(e, grant);
  }
};
