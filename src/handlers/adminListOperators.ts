import { listOperators } from '../accounts/operators';
import { operatorView } from '../services/views';
import type { Handler } from './types';

/** GET /admin/api/operators (owners): every operator, without passwords or TOTP secrets. */
export const adminListOperators: Handler<'adminListOperators'> = async ({ app }) => ({
  body: { data: (await listOperators(app.db)).map(operatorView) },
});
