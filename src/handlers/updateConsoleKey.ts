import type { KeyChanges, Scope } from '../accounts/keys';
import { changeKey, checkModels } from '../services/consoleKeys';
import { budgetParam, expiryParam, keyView, usdParam } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** PATCH /console/api/keys/{id}: only the given fields change; another account's key is a 404. */
export const updateConsoleKey: Handler<'updateConsoleKey'> = async ({ session, params, body, app }) => {
  if (body.models) checkModels(app.config, body.models);
  const changes: KeyChanges = {};
  if (body.name !== undefined) changes.name = body.name?.trim() || null;
  if (body.enabled !== undefined) changes.enabled = body.enabled;
  if (body.quota_usd !== undefined)
    changes.quotaMicros = body.quota_usd === null ? null : usdParam(body.quota_usd, 'quota_usd');
  if (body.models !== undefined) changes.models = body.models;
  if (body.scopes !== undefined) changes.scopes = body.scopes as Scope[];
  if (body.expires_at !== undefined) changes.expiresAt = expiryParam(body.expires_at, 'expires_at');
  if (body.budget !== undefined) changes.budget = budgetParam(body.budget);
  const key = await changeKey(app.db, params.id, changes, session.accountId);
  if (!key) throw errors.keyNotFound(params.id);
  app.keys.changed({ keyId: key.id });
  return { body: keyView(key) };
};
