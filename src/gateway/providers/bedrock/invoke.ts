/**
 * InvokeModel and InvokeModelWithResponseStream (POST /model/{modelId}/invoke, /invoke-with-response-stream): the
 * model's own body. Claude's is Anthropic's Messages request with `anthropic_version: "bedrock-2023-05-31"` in it, no
 * `model` (it is in the URL) nor `stream` (the path says), and the betas in `anthropic_beta`; its stream is
 * Anthropic's events, each base64 in the `bytes` of a `chunk` event. Embeddings: Titan Text Embeddings v2 and Cohere
 * Embed, each in its own shape.
 */
import type { SseEvent } from '../../sse';
import {
  UpstreamError,
  type AnthropicEvent,
  type EmbeddingRequest,
  type EmbeddingResponse,
  type MessagesRequest,
} from '../../types';
import { native } from '../anthropic';
import { eventObject, str } from '../http';
import { badRequest } from './converse';

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** The InvokeModel body for Claude: the client's Messages request as Bedrock takes it. */
export function toInvokeMessages(
  body: MessagesRequest,
  model: string,
  maxTokens: number,
  headers: Record<string, string>,
): Record<string, unknown> {
  // Bedrock refuses keys it does not know: the model is in the path, streaming in the action, and it has no
  // service tiers (the standard tier the policy pins is the only one it sells through this API).
  const {
    model: _m,
    stream: _s,
    service_tier: _t,
    ...rest
  } = native(body, model, maxTokens, false) as MessagesRequest & {
    service_tier?: unknown;
  };
  const betas = (headers['anthropic-beta'] ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  return { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...rest, ...(betas.length ? { anthropic_beta: betas } : {}) };
}

/** The Anthropic events inside InvokeModelWithResponseStream's `chunk` events, until message_stop. */
export async function* anthropicEvents(source: AsyncIterable<SseEvent>): AsyncGenerator<AnthropicEvent> {
  for await (const ev of source) {
    if (ev.event !== 'chunk') continue;
    const bytes = str((eventObject(ev.data) as { bytes?: unknown }).bytes);
    if (!bytes) throw new UpstreamError('protocol', 'the upstream sent a chunk without bytes');
    const parsed = eventObject(Buffer.from(bytes, 'base64').toString('utf8')) as AnthropicEvent &
      Record<string, unknown>;
    if (parsed.type === 'error')
      throw new UpstreamError(
        'protocol',
        'the upstream reported an error inside the stream',
        undefined,
        str(parsed.error?.message),
      );
    // Bedrock's own counts ride on message_stop; Anthropic's clients expect its shape, and the usage is in message_delta.
    delete parsed['amazon-bedrock-invocationMetrics'];
    yield parsed;
    if (parsed.type === 'message_stop') return;
  }
  throw new UpstreamError('protocol', 'the upstream stream ended without message_stop');
}

/** The answer of a whole InvokeModel for Claude, without Bedrock's additions. */
export function fromInvokeMessages(json: unknown): never {
  if (!json || typeof json !== 'object' || Array.isArray(json))
    throw new UpstreamError('protocol', 'the upstream answer is not a JSON object');
  const { 'amazon-bedrock-invocationMetrics': _m, ...rest } = json as Record<string, unknown>;
  return rest as never;
}

// ---------------------------------------------------------------------------------------------------------------
// Embeddings

type EmbedFamily = 'titan' | 'cohere';

function family(model: string): EmbedFamily {
  if (/(^|\.)amazon\.titan-embed-text-v2/.test(model)) return 'titan';
  if (/(^|\.)cohere\.embed-/.test(model)) return 'cohere';
  throw badRequest(`embeddings are served for Titan Text Embeddings v2 and Cohere Embed models only (not ${model})`);
}

function texts(body: EmbeddingRequest): string[] {
  const input = body.input as unknown;
  if (typeof input === 'string') return [input];
  if (Array.isArray(input) && input.every((x) => typeof x === 'string')) return input as string[];
  throw badRequest('token arrays are not supported by this model');
}

/** The InvokeModel body: Titan embeds one text a call, Cohere a list (of up to 96). */
export function toInvokeEmbeddings(body: EmbeddingRequest, model: string): Record<string, unknown> {
  const list = texts(body);
  const dims = typeof body.dimensions === 'number' ? body.dimensions : undefined;
  if (family(model) === 'titan') {
    if (list.length !== 1) throw badRequest('this model embeds one input per request: send a string, not a list');
    return { inputText: list[0], ...(dims ? { dimensions: dims } : {}), normalize: true };
  }
  return { texts: list, input_type: 'search_document', ...(dims ? { output_dimension: dims } : {}) };
}

/** Titan reports its input tokens; Cohere on Bedrock reports none in the body (the gateway counts them then). */
export function fromInvokeEmbeddings(json: unknown, model: string, body: EmbeddingRequest): EmbeddingResponse {
  const j = (json ?? {}) as { embedding?: unknown; inputTextTokenCount?: unknown; embeddings?: unknown };
  const raw =
    family(model) === 'titan'
      ? [j.embedding]
      : Array.isArray(j.embeddings)
        ? j.embeddings
        : (j.embeddings as { float?: unknown[] })?.float;
  const vectors = raw as unknown[] | undefined;
  if (!Array.isArray(vectors) || vectors.length !== texts(body).length || !vectors.every((v) => Array.isArray(v)))
    throw new UpstreamError('protocol', 'the upstream answered with embeddings we cannot read');
  const tokens = typeof j.inputTextTokenCount === 'number' ? j.inputTextTokenCount : undefined;
  return {
    object: 'list',
    data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: v as number[] })),
    model,
    ...(tokens !== undefined ? { usage: { prompt_tokens: tokens, total_tokens: tokens } } : {}),
  } as EmbeddingResponse;
}
