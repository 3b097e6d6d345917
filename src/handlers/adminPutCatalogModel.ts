import { changeCatalog } from '../services/catalogApi';
import { putModel } from '../services/catalogDocument';
import type { Handler } from './types';

/** PUT /admin/api/catalog/models/{id} (admins): adds or replaces a model, its prices and routes. */
export const adminPutCatalogModel: Handler<'adminPutCatalogModel'> = async ({ app, params, body, operator, http }) => {
  const target = `model:${params.id}`;
  const call = { operation: 'adminPutCatalogModel', address: http.remoteAddress, target };
  const revision = await changeCatalog(app, call, operator, (doc) =>
    putModel(doc, params.id, body as Record<string, unknown>),
  );
  return { body: { revision, model: app.catalog.snapshot(target) }, audited: true };
};
