/**
 * The provider registry: one folder per upstream wire format, one line here. The configuration's provider `type`
 * picks the descriptor; the configuration reads each type's capabilities and settings from this catalog.
 */
import type { ModelKind, ProviderCatalog, ProviderConfig } from '../../config';
import { WIRES } from '../../contract';
import { anthropic } from './anthropic';
import { bedrock } from './bedrock';
import { azure } from './azure';
import { gemini } from './gemini';
import { mock } from './mock';
import { openai } from './openai';
import { Provider } from './provider';
import type { ProviderDescriptor, UpstreamOp } from './types';
import { vertex } from './vertex';

export const PROVIDERS: Record<string, ProviderDescriptor<any>> = {
  openai,
  azure,
  anthropic,
  gemini,
  bedrock,
  vertex,
  mock,
};

/** The model kinds a provider serves: those of the upstream operations it has adapters for (the contract's). */
function kinds(d: ProviderDescriptor<any>): ModelKind[] {
  return [...new Set((Object.keys(d.operations) as UpstreamOp[]).flatMap((op) => WIRES[op]))];
}

/** A provider that answers in the process needs no base_url. */
function isLocal(d: ProviderDescriptor<any>): boolean {
  return Object.values(d.operations).every((a) => a && 'local' in a);
}

/** What the configuration needs to know of each provider type. */
export const PROVIDER_CATALOG: ProviderCatalog = Object.fromEntries(
  Object.values(PROVIDERS).map((d) => [
    d.type,
    {
      baseUrl: d.baseUrl,
      needsBaseUrl: !d.baseUrl && !isLocal(d),
      serves: kinds(d),
      settings: d.settings,
      required: d.required,
      cache: d.cache,
      secrets: d.secrets,
    },
  ]),
);

export function createProviders(configs: Record<string, ProviderConfig>): Map<string, Provider> {
  return new Map(Object.values(configs).map((c) => [c.name, new Provider(PROVIDERS[c.type], c)]));
}

export { Provider };
