/** The models a key may see and use, from the configuration. */
import type { Config, ModelConfig, ModelKind } from '../config';
import { errors } from '../errors';
import { keyAllowsModel, type ApiKey } from '../accounts/keys';
import type { Model } from './types';

export type Endpoint = 'chat' | 'completions' | 'embeddings';

const ENDPOINT_PATH: Record<Endpoint, string> = {
  chat: '/v1/chat/completions',
  completions: '/v1/completions',
  embeddings: '/v1/embeddings',
};

/** Which model kinds each endpoint serves (a chat model also answers legacy completions, translated). */
const SERVES: Record<Endpoint, ModelKind[]> = {
  chat: ['chat'],
  completions: ['completion', 'chat'],
  embeddings: ['embedding'],
};

export class ModelRegistry {
  private readonly byId: Map<string, ModelConfig>;

  constructor(config: Config) {
    this.byId = new Map(config.models.map((m) => [m.id, m]));
  }

  /** The models the key may use, in configuration order. */
  list(key: ApiKey): Model[] {
    return [...this.byId.values()].filter((m) => keyAllowsModel(key, m.id)).map(toModel);
  }

  /** One model for GET /v1/models/{model}: unknown or not allowed → 404. */
  describe(id: string, key: ApiKey): Model {
    const m = this.byId.get(id);
    if (!m || !keyAllowsModel(key, id)) throw errors.modelNotFound(id, 404);
    return toModel(m);
  }

  /** The model a request names, checked against the key and the endpoint. */
  resolve(id: string, key: ApiKey, endpoint: Endpoint): ModelConfig {
    const m = this.byId.get(id);
    if (!m || !keyAllowsModel(key, id)) throw errors.modelNotFound(id);
    if (!SERVES[endpoint].includes(m.kind)) throw errors.wrongModelKind(id, m.kind, ENDPOINT_PATH[endpoint]);
    return m;
  }
}

function toModel(m: ModelConfig): Model {
  return { id: m.id, object: 'model', created: m.created, owned_by: m.owned_by };
}
