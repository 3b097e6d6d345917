/**
 * The catalog as the admin API changes it: who the change is by (the audit log's actor, and whether it may touch
 * credentials: the owner role, or the admin token), and the refusals of services/catalog.ts as API errors.
 */
import type { OperatorSession } from '../accounts/operators';
import { ApiError, errors } from '../errors';
import { SecretKeyError } from '../secrets';
import type { App } from './app';
import { operatorActor } from './audit';
import { CatalogError, type CatalogDocument, type Edited } from './catalogDocument';

/**
 * Makes a change as the caller of `operation` from `address`, to `target` (`provider:<name>`, `model:<id>`); answers
 * the revision written. Its audit record is written with the revision (the handler's reply says so: `audited`).
 */
export async function changeCatalog(
  app: App,
  call: { operation: string; address: string; target: string },
  operator: OperatorSession | undefined,
  edit: (doc: CatalogDocument) => Edited,
): Promise<number> {
  const { operation, address, target } = call;
  const role = operator?.operator.role ?? 'owner'; // the admin token is an owner
  const actor = operator ? operatorActor(operator.operator) : 'admin-token';
  try {
    return await app.catalog.change(edit, { actor, address, action: operation, target }, role === 'owner');
  } catch (e) {
    if (e instanceof CatalogError) throw apiError(e, role, operation);
    if (e instanceof SecretKeyError)
      throw errors.catalogConflict(
        `${e.message}; restart this process with the key the catalog is encrypted under`,
        'catalog_busy',
      );
    throw e;
  }
}

function apiError(e: CatalogError, role: string, operation: string) {
  switch (e.kind) {
    case 'credential': {
      const refused = errors.insufficientRole(role, operation, 'owner');
      const message = `${refused.message} to set or remove a credential (${e.message})`;
      return new ApiError(403, refused.type, message, refused.code, e.param);
    }
    case 'invalid':
      return errors.invalidRequest(e.message, e.param);
    case 'not_found':
      return errors.notFoundResource(e.message, e.param);
    case 'yaml':
      return errors.catalogConflict(e.message, 'catalog_in_file');
    case 'conflict':
      return errors.catalogConflict(e.message, e.param ? 'provider_in_use' : 'catalog_busy', e.param ?? undefined);
  }
}
