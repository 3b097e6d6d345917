import type { Config } from '../config';
import { errors } from '../errors';

export const MAX_KEYS_PER_ACCOUNT = 200;

/** Every model of a key's allow-list must be a configured model (400 naming the first that is not). */
export function checkModels(config: Config, models: string[]): void {
  const known = new Set(config.models.map((m) => m.id));
  const unknown = models.find((m) => !known.has(m));
  if (unknown !== undefined) throw errors.invalidRequest(`Unknown model: ${unknown}`, 'models', 'model_not_found');
}
