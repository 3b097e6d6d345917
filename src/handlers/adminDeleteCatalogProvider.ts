import { changeCatalog } from '../services/catalogApi';
import { deleteProvider } from '../services/catalogDocument';
import type { Handler } from './types';

/** DELETE /admin/api/catalog/providers/{name} (admins): refused while models route to it. */
export const adminDeleteCatalogProvider: Handler<'adminDeleteCatalogProvider'> = async (input) => {
  const { app, params, operator, http } = input;
  const target = `provider:${params.name}`;
  const call = { operation: 'adminDeleteCatalogProvider', address: http.remoteAddress, target };
  const revision = await changeCatalog(app, call, operator, (doc) => deleteProvider(doc, params.name));
  return { body: { revision, deleted: params.name }, audited: true };
};
