import { updateKey, type KeyChanges, type Scope } from '../accounts/keys';
import { checkModels } from '../console/keys';
import { keyView, usdParam } from '../console/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** PATCH /console/api/keys/{id}: only the given fields change; another account's key is a 404. */
export const updateConsoleKey: Handler<'updateConsoleKey'> = async ({ session, params, body, app }) => {
  if (body.models) checkModels(app, body.models);
  const changes: KeyChanges = {};
  if (body.name !== undefined) changes.name = body.name?.trim() || null;
  if (body.enabled !== undefined) changes.enabled = body.enabled;
  if (body.quota_usd !== undefined) changes.quotaMicros = body.quota_usd === null ? null : usdParam(body.quota_usd, 'quota_usd');
  if (body.models !== undefined) changes.models = body.models;
  if (body.scopes !== undefined) changes.scopes = body.scopes as Scope[];
  const key = await updateKey(app.db, params.id, changes, session.accountId);
  if (!key) throw errors.keyNotFound(params.id);
  return { body: keyView(key) };
};
