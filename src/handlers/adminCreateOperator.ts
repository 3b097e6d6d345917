import { addOperator } from '../services/operators';
import { operatorView } from '../services/views';
import type { Handler } from './types';

/** POST /admin/api/operators (owners): a new operator and their first password, answered this once. */
export const adminCreateOperator: Handler<'adminCreateOperator'> = async ({ body, app }) => {
  const { operator, password } = await addOperator(app.db, body.email, body.role);
  return {
    status: 201,
    body: { operator: operatorView(operator), password },
    headers: { 'cache-control': 'no-store' },
  };
};
