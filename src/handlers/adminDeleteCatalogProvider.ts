import { changeCatalog } from '../services/catalogApi';
import { deleteProvider } from '../services/catalogDocument';
import type { Handler } from './types';

/** DELETE /admin/api/catalog/providers/{name} (admins): refused while models route to it. */
export const adminDeleteCatalogProvider: Handler<'adminDeleteCatalogProvider'> = async ({ app, params, operator }) => {
  const revision = await changeCatalog(app, 'adminDeleteCatalogProvider', operator, (doc) =>
    deleteProvider(doc, params.name),
  );
  return { body: { revision, deleted: params.name } };
};
