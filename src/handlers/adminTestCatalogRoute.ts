import { errors } from '../errors';
import { testRoute } from '../services/routeTest';
import type { Handler } from './types';

/** POST /admin/api/catalog/models/{id}/routes/{index}/test (admins): one smallest request through exactly that route. */
export const adminTestCatalogRoute: Handler<'adminTestCatalogRoute'> = async ({ app, params }) => {
  const model = app.config.models.find((m) => m.id === params.id);
  if (!model) throw errors.notFoundResource(`No such model: ${params.id}`, 'id');
  if (!model.routes[params.index])
    throw errors.notFoundResource(`Model ${params.id} has no route ${params.index}`, 'index');
  return { body: await testRoute(app.config, model, params.index) };
};
