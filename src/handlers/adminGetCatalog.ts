import type { Handler } from './types';

/** GET /admin/api/catalog (viewers): providers (credentials as their last 4 characters) and models, as served here. */
export const adminGetCatalog: Handler<'adminGetCatalog'> = async ({ app }) => ({ body: app.catalog.view() });
