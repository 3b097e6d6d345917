import type { Handler } from './types';

/** GET /v1/models/{model} */
export const retrieveModel: Handler<'retrieveModel'> = async ({ params, principal, app }) => ({
  body: app.metered.model(params.model, principal.key),
});
