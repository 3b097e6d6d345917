import { changeCatalog } from '../services/catalogApi';
import { putProvider, type ProviderInput } from '../services/catalogDocument';
import type { Handler } from './types';

/** PUT /admin/api/catalog/providers/{name} (admins; credentials: owners): adds or replaces a provider. */
export const adminPutCatalogProvider: Handler<'adminPutCatalogProvider'> = async ({ app, params, body, operator }) => {
  const revision = await changeCatalog(app, 'adminPutCatalogProvider', operator, (doc) =>
    putProvider(doc, params.name, body as ProviderInput),
  );
  return { body: { revision, provider: app.catalog.snapshot(`provider:${params.name}`) } };
};
