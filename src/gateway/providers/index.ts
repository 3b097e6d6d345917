/** One folder per upstream wire format; the configuration's provider `type` picks the class. */
import type { ProviderConfig, ProviderType } from '../../config';
import type { Provider } from '../types';
import { AnthropicProvider } from './anthropic';
import { GeminiProvider } from './gemini';
import { MockProvider } from './mock';
import { OpenAIProvider } from './openai';

const PROVIDERS: Record<ProviderType, new (config: ProviderConfig) => Provider> = {
  openai: OpenAIProvider,
  anthropic: AnthropicProvider,
  gemini: GeminiProvider,
  mock: MockProvider,
};

export function createProvider(config: ProviderConfig): Provider {
  return new PROVIDERS[config.type](config);
}
