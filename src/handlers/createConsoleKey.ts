import { createKey, type Scope } from '../accounts/keys';
import { checkModels, MAX_KEYS_PER_ACCOUNT } from '../services/consoleKeys';
import { budgetParam, expiryParam, keyView, usdParam } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /console/api/keys: a new key; its secret is in this answer only. */
export const createConsoleKey: Handler<'createConsoleKey'> = async ({ session, body, app }) => {
  if (body.models) checkModels(app.config, body.models);
  const [{ n }] = (await app.db('api_keys').where('account_id', session.accountId).count({ n: '*' })) as {
    n: unknown;
  }[];
  if (Number(n) >= MAX_KEYS_PER_ACCOUNT)
    throw errors.invalidRequest(
      `An account can have at most ${MAX_KEYS_PER_ACCOUNT} keys; delete one first`,
      null,
      'too_many_keys',
    );
  const { key, secret } = await createKey(app.db, {
    accountId: session.accountId,
    name: body.name?.trim() || null,
    quotaMicros: body.quota_usd === undefined || body.quota_usd === null ? null : usdParam(body.quota_usd, 'quota_usd'),
    models: body.models ?? null,
    scopes: body.scopes as Scope[] | undefined,
    expiresAt: expiryParam(body.expires_at, 'expires_at') ?? null,
    budget: budgetParam(body.budget) ?? null,
  });
  return { status: 201, body: { key: keyView(key), secret }, headers: { 'cache-control': 'no-store' } };
};
