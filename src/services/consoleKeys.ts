import type { Knex } from 'knex';
import { updateKey, type ApiKey, type KeyChanges } from '../accounts/keys';
import { startBudgetPeriod } from '../billing/budgets';
import type { Config } from '../config';
import { errors } from '../errors';

export const MAX_KEYS_PER_ACCOUNT = 200;

/** Every model of a key's allow-list must be a configured model (400 naming the first that is not). */
export function checkModels(config: Config, models: string[]): void {
  const known = new Set(config.models.map((m) => m.id));
  const unknown = models.find((m) => !known.has(m));
  if (unknown !== undefined) throw errors.invalidRequest(`Unknown model: ${unknown}`, 'models', 'model_not_found');
}

/**
 * Changes a key (console, admin API, CLI alike); a budget set or changed starts its period from what the key spent
 * since the period began. Null when there is no such key (of that account, with `accountId`).
 */
export async function changeKey(db: Knex, id: number, changes: KeyChanges, accountId?: number): Promise<ApiKey | null> {
  const key = await updateKey(db, id, changes, accountId);
  if (!key || !changes.budget) return key;
  await startBudgetPeriod(db, key.id);
  return updateKey(db, key.id, {});
}
