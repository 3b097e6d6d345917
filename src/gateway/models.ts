/** The configured models, by id. Which of them a key may use is decided by the caller (the request layer). */
import type { Config, ModelConfig, ModelKind } from '../config';
import { WIRES } from '../contract';
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
  resolve(id: string, op: Served): ModelConfig {
    const m = this.byId.get(id);
    if (!m) throw errors.modelNotFound(id);
    if (!servedKinds(op).includes(m.kind)) throw errors.wrongModelKind(id, m.kind, op.path);
    return m;
  }
}

type Served = Pick<Operation, 'upstream' | 'bridge' | 'path'>;
const served = new WeakMap<Served, readonly ModelKind[]>();

/**
 * The kinds of model an operation serves: those its wire serves (the contract's x-switchyard.kinds) and, when it
 * can go through another wire (its bridge), that wire's too: legacy completions take chat models through chat.
 * Worked out once per operation: it is asked on every paid request.
 */
export function servedKinds(op: Served): readonly ModelKind[] {
  let kinds = served.get(op);
  if (!kinds)
    served.set(
      op,
      (kinds = op.bridge ? [...new Set([...WIRES[op.upstream], ...WIRES[op.bridge.via]])] : WIRES[op.upstream]),
    );
  return kinds;
}

export function toModel(m: ModelConfig): Model {
  return { id: m.id, object: 'model', created: m.created, owned_by: m.owned_by };
}
