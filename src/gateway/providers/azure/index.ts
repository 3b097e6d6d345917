/**
 * Provider `azure`: Azure OpenAI. The same wire format as OpenAI's, reached per deployment: the route's `model` is
 * the deployment name, in the path (`/openai/deployments/{deployment}/chat/completions`), `api-version` goes in the
 * query, and the key in an `api-key` header. `base_url` is the resource's endpoint, e.g.
 * https://my-resource.openai.azure.com. Azure, like OpenAI, refuses max_tokens and max_completion_tokens together.
 * A stream starts with a chunk that has no choices and only Azure's prompt filter results: it is not passed on
 * (OpenAI's clients read choices[0] of every chunk).
 */
import type { SseEvent } from '../../sse';
import type { ChatChunk, CompletionResponse } from '../../types';
import {
  chatBody,
  completionBody,
  embeddingList,
  formOf,
  imageBody,
  imageEditForm,
  imageList,
  moderationList,
  object,
  OUTPUT_LIMITS,
  speechAdapter,
  untilDone,
  transcript,
} from '../openai';
import { defineProvider, type CallContext } from '../types';

/** The latest generally available data-plane version when this was written. */
export const DEFAULT_API_VERSION = '2024-10-21';

const deployment = (ctx: CallContext, operation: string) => {
  const version = (ctx.config.settings.api_version as string | undefined) ?? DEFAULT_API_VERSION;
  return `/openai/deployments/${encodeURIComponent(ctx.model)}/${operation}?api-version=${encodeURIComponent(version)}`;
};

/** Azure reads max_completion_tokens (its reasoning deployments refuse max_tokens) unless configured otherwise. */
const withLimit = (ctx: CallContext): CallContext => ({
  ...ctx,
  config: { ...ctx.config, settings: { output_limit: 'max_completion_tokens', ...ctx.config.settings } },
});

/** The stream's chunks, without Azure's own (no choices, no usage: content filter results only). */
async function* chunks<T extends { choices?: unknown[]; usage?: unknown }>(
  events: AsyncIterable<SseEvent>,
): AsyncGenerator<T> {
  for await (const c of untilDone<T>(events)) if (c.choices?.length || c.usage) yield c;
}

export const azure = defineProvider({
  type: 'azure',
  genAi: 'azure.ai.openai',
  settings: {
    api_version: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}(-preview)?$' },
    output_limit: { enum: [...OUTPUT_LIMITS] },
  },
  headers: (c): Record<string, string> => (c.api_key ? { 'api-key': c.api_key } : {}),
  operations: {
    chat: {
      path: (ctx) => deployment(ctx, 'chat/completions'),
      request: (body, ctx) => chatBody(body, withLimit(ctx)),
      response: object,
      stream: (events) => chunks<ChatChunk>(events),
    },
    completions: {
      path: (ctx) => deployment(ctx, 'completions'),
      request: completionBody,
      response: object,
      stream: (events) => chunks<CompletionResponse>(events),
    },
    embeddings: {
      path: (ctx) => deployment(ctx, 'embeddings'),
      request: (body, ctx) => ({ ...body, model: ctx.model }),
      response: embeddingList,
    },
    // DALL·E 3 deployments from api-version 2024-02-01; gpt-image-1 ones need 2025-04-01-preview (`api_version`).
    images: {
      path: (ctx) => deployment(ctx, 'images/generations'),
      request: imageBody,
      response: imageList,
    },
    imageEdits: { path: (ctx) => deployment(ctx, 'images/edits'), request: imageEditForm, response: imageList },
    // Whisper deployments (api-version 2024-02-01 and later); gpt-4o-transcribe ones need 2025-03-01-preview.
    transcriptions: { path: (ctx) => deployment(ctx, 'audio/transcriptions'), request: formOf, response: transcript },
    translations: { path: (ctx) => deployment(ctx, 'audio/translations'), request: formOf, response: transcript },
    // Speech needs an api_version that has it (2025-03-01-preview and later for gpt-4o-mini-tts).
    speech: { path: (ctx) => deployment(ctx, 'audio/speech'), ...speechAdapter },
    // Per deployment too, as the other gateways reach it: a resource serves it if it has a moderation deployment.
    moderations: {
      path: (ctx) => deployment(ctx, 'moderations'),
      request: (body, ctx) => ({ ...body, model: ctx.model }),
      response: moderationList,
    },
  },
});
