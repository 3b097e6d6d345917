import { operatorSessionView } from '../services/views';
import type { Handler } from './types';

/** GET /admin/api/session: who is signed in, whether past the second factor, and the CSRF token. */
export const getOperatorSession: Handler<'getOperatorSession'> = async ({ operator }) => ({
  body: operatorSessionView(operator.operator, operator),
  headers: { 'cache-control': 'no-store' },
});
