/** The configured models, by id. Which of them a key may use is decided by the caller (the request layer). */
import type { Config, ModelConfig } from '../config';
import { errors } from '../errors';
import type { Operation } from './operations';
import type { Model } from './types';

export class ModelRegistry {
  private readonly byId: Map<string, ModelConfig>;

  constructor(config: Config) {
    this.byId = new Map(config.models.map((m) => [m.id, m]));
  }

  get(id: string): ModelConfig | undefined {
    return this.byId.get(id);
  }

  /** Every model, in configuration order. */
  all(): ModelConfig[] {
    return [...this.byId.values()];
  }

  /** The model a request names, checked against the operation (unknown → 400 Model not found). */
  resolve(id: string, op: Pick<Operation, 'serves' | 'path'>): ModelConfig {
    const m = this.byId.get(id);
    if (!m) throw errors.modelNotFound(id);
    if (!op.serves.includes(m.kind)) throw errors.wrongModelKind(id, m.kind, op.path);
    return m;
  }
}

export function toModel(m: ModelConfig): Model {
  return { id: m.id, object: 'model', created: m.created, owned_by: m.owned_by };
}
