import type { Handler } from './types';

/** DELETE /v1/responses/{response_id} */
export const deleteResponse: Handler<'deleteResponse'> = async ({ app, params, principal }) => ({ body: await app.responses.forget(principal.accountId, params.response_id) });
