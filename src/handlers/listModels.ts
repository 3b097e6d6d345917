import type { Handler } from './types';

/** GET /v1/models: only the models this key may use. */
export const listModels: Handler<'listModels'> = async ({ principal, app }) => ({
  body: { object: 'list', data: app.metered.models(principal.key) },
});
