import type { KeyChanges } from '../accounts/keys';
import { changeKey } from '../services/consoleKeys';
import { budgetParam, expiryParam, keyView } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** PATCH /admin/api/keys/{id}: any account's key: enabled or not, its expiry and budget. */
export const adminUpdateKey: Handler<'adminUpdateKey'> = async ({ params, body, app }) => {
  const changes: KeyChanges = {};
  if (body.enabled !== undefined) changes.enabled = body.enabled;
  if (body.expires_at !== undefined) changes.expiresAt = expiryParam(body.expires_at, 'expires_at');
  if (body.budget !== undefined) changes.budget = budgetParam(body.budget);
  const key = await changeKey(app.db, params.id, changes);
  if (!key) throw errors.keyNotFound(params.id);
  app.keys.changed({ keyId: key.id });
  return { body: keyView(key) };
};
