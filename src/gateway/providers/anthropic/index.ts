/** Provider `anthropic`: being written; until then every call fails as an unreadable upstream answer. */
import type { ProviderConfig } from '../../../config';
import { UpstreamError, type Provider } from '../../types';

const todo = (): never => {
  throw new UpstreamError('protocol', 'the anthropic provider is not implemented yet');
};

export class AnthropicProvider implements Provider {
  constructor(readonly config: ProviderConfig) {}
  chat = todo;
  chatStream = todo;
  completion = todo;
  completionStream = todo;
  embeddings = todo;
  async close(): Promise<void> {}
}
