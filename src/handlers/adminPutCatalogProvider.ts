import { changeCatalog } from '../services/catalogApi';
import { putProvider, type ProviderInput } from '../services/catalogDocument';
import type { Handler } from './types';

/** PUT /admin/api/catalog/providers/{name} (admins; credentials: owners): adds or replaces a provider. */
export const adminPutCatalogProvider: Handler<'adminPutCatalogProvider'> = async (input) => {
  const { app, params, body, operator, http } = input;
  const target = `provider:${params.name}`;
  const call = { operation: 'adminPutCatalogProvider', address: http.remoteAddress, target };
  const revision = await changeCatalog(app, call, operator, (doc) =>
    putProvider(doc, params.name, body as ProviderInput),
  );
  return { body: { revision, provider: app.catalog.snapshot(target) }, audited: true };
};
