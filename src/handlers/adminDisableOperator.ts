import { disableOperatorById } from '../services/operators';
import { operatorView } from '../services/views';
import type { Handler } from './types';

/** POST /admin/api/operators/{id}/disable (owners): they can no longer sign in; their sessions end at once. */
export const adminDisableOperator: Handler<'adminDisableOperator'> = async ({ params, app }) => ({
  body: operatorView(await disableOperatorById(app.db, params.id)),
});
