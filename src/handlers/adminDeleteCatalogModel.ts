import { changeCatalog } from '../services/catalogApi';
import { deleteModel } from '../services/catalogDocument';
import type { Handler } from './types';

/** DELETE /admin/api/catalog/models/{id} (admins). */
export const adminDeleteCatalogModel: Handler<'adminDeleteCatalogModel'> = async ({ app, params, operator, http }) => {
  const call = { operation: 'adminDeleteCatalogModel', address: http.remoteAddress, target: `model:${params.id}` };
  const revision = await changeCatalog(app, call, operator, (doc) => deleteModel(doc, params.id));
  return { body: { revision, deleted: params.id }, audited: true };
};
