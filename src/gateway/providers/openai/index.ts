/**
 * Provider `openai`: any OpenAI-compatible upstream (OpenAI, vLLM, Ollama, Groq, Together, DeepSeek...). Requests
 * are forwarded as the client wrote them (unknown fields included) with the upstream's model id, the output
 * allowance in the limit field(s) the upstream reads (`output_limit`), and usage always asked for on streams.
 */
import type { ProviderConfig } from '../../../config';
import type { SseEvent } from '../../sse';
import {
  UpstreamError,
  type ChatChunk,
  type ChatRequest,
  type CompletionRequest,
  type CompletionResponse,
  type ImageRequest,
  type ResponseEvent,
  type ResponsesRequest,
  type SpeechEvent,
  type SpeechRequest,
} from '../../types';
import { FormBody } from '../form';
import { eventObject } from '../http';
import { fieldsOf, isObject, str } from '../shared';
import { defineProvider, type CallContext } from '../types';

export const OUTPUT_LIMITS = ['max_completion_tokens', 'max_tokens', 'both'] as const;
export type OutputLimit = (typeof OUTPUT_LIMITS)[number];

/**
 * Which limit field(s) carry the output allowance. OpenAI itself (and Azure) refuses both at once and its reasoning
 * models refuse max_tokens; other compatible servers may read either one, so both are set unless configured.
 */
export function outputLimit(config: ProviderConfig): OutputLimit {
  let field = limits.get(config);
  if (!field) {
    const host = config.base_url ? new URL(config.base_url).hostname : '';
    field =
      (config.settings.output_limit as OutputLimit | undefined) ??
      (host === 'api.openai.com' ? 'max_completion_tokens' : 'both');
    limits.set(config, field);
  }
  return field;
}
const limits = new WeakMap<ProviderConfig, OutputLimit>();

/** The chat body for the upstream: its model id, the allowance in the right field(s), usage asked for on streams. */
export function chatBody(body: ChatRequest, ctx: CallContext): object {
  const field = outputLimit(ctx.config);
  const out = fieldsOf(body, LIMIT_FIELDS); // built field by field: see fieldsOf
  out.model = ctx.model;
  if (field !== 'max_tokens') out.max_completion_tokens = ctx.maxOutputTokens;
  if (field !== 'max_completion_tokens') out.max_tokens = ctx.maxOutputTokens;
  return streaming(out, body, ctx);
}
const LIMIT_FIELDS = ['max_tokens', 'max_completion_tokens'];

export function completionBody(body: CompletionRequest, ctx: CallContext): object {
  const out = fieldsOf(body);
  out.model = ctx.model;
  out.max_tokens = ctx.maxOutputTokens;
  return streaming(out, body, ctx);
}

/** A streaming request always asks for usage; the gateway hides the usage chunk from clients that did not ask. */
function streaming(out: Record<string, unknown>, body: { stream_options?: unknown }, ctx: CallContext): object {
  out.stream = ctx.stream;
  if (ctx.stream) {
    const options = isObject(body.stream_options) ? fieldsOf(body.stream_options) : {};
    options.include_usage = true;
    out.stream_options = options;
  }
  return out;
}

/** The JSON of each event until [DONE]; an error reported inside the stream ends it. */
export async function* untilDone<T>(events: AsyncIterable<SseEvent>): AsyncGenerator<T> {
  for await (const ev of events) {
    if (ev.data === '[DONE]') return;
    const parsed = eventObject(ev.data) as { error?: { message?: unknown }; choices?: unknown };
    const error = parsed.error;
    if (error && typeof error === 'object') {
      throw new UpstreamError(
        'protocol',
        'the upstream reported an error inside the stream',
        undefined,
        str(error.message),
      );
    }
    if (!Array.isArray(parsed.choices))
      throw new UpstreamError('protocol', 'the upstream sent a chunk without choices');
    yield parsed as T;
  }
  throw new UpstreamError('protocol', 'the upstream stream ended without [DONE]');
}

/** An answer must be a JSON object: anything else is a protocol failure (so the next route is tried). */
export function object<T>(json: unknown): T {
  if (!json || typeof json !== 'object' || Array.isArray(json))
    throw new UpstreamError('protocol', 'the upstream answer is not a JSON object');
  return json as T;
}

/** An embeddings answer: a list whose `data` are embeddings (floats, or base64 when asked); else a protocol failure. */
export function embeddingList<T>(json: unknown): T {
  const data = object<{ data?: unknown }>(json).data;
  const ok =
    Array.isArray(data) &&
    data.every(
      (d) =>
        d &&
        typeof d === 'object' &&
        (Array.isArray((d as { embedding?: unknown }).embedding) ||
          typeof (d as { embedding?: unknown }).embedding === 'string'),
    );
  if (!ok) throw new UpstreamError('protocol', 'the upstream answer is not a list of embeddings');
  return json as T;
}

/**
 * OpenAI's GPT image models (and Azure deployments named after them): they always answer base64 and refuse
 * `response_format` ("Unknown parameter"); DALL·E and other servers answer a URL unless asked for b64_json.
 */
const GPT_IMAGE = /^gpt-image/i;

/** The images body for the upstream: its model id, and base64 asked for wherever the model takes the field. */
export function imageBody(body: ImageRequest, ctx: CallContext): object {
  const { response_format: _asked, ...rest } = body;
  return { ...rest, model: ctx.model, ...(GPT_IMAGE.test(ctx.model) ? {} : { response_format: 'b64_json' }) };
}

/**
 * An images answer: a list of base64 images. One of URLs (an upstream that ignored response_format) cannot be
 * passed on — the gateway hosts no images —: a protocol failure.
 */
export function imageList<T>(json: unknown): T {
  const data = object<{ data?: unknown }>(json).data;
  if (!Array.isArray(data) || !data.every((d) => isObject(d) && typeof d.b64_json === 'string'))
    throw new UpstreamError('protocol', 'the upstream answer is not a list of base64 images (b64_json)');
  return json as T;
}

/** A moderation answer: a list of `results`, each saying whether it is `flagged`; else a protocol failure. */
export function moderationList<T>(json: unknown): T {
  const results = object<{ results?: unknown }>(json).results;
  const ok =
    Array.isArray(results) &&
    results.every((r) => r && typeof r === 'object' && typeof (r as { flagged?: unknown }).flagged === 'boolean');
  if (!ok) throw new UpstreamError('protocol', 'the upstream answer is not a list of moderation results');
  return json as T;
}

/**
 * A rerank answer (Cohere's, Jina's, vLLM's): `results`, each with the `index` of a document and its
 * `relevance_score`; else a protocol failure (TEI's own /rerank answers a bare list: not this shape).
 */
export function rerankList<T>(json: unknown): T {
  const results = object<{ results?: unknown }>(json).results;
  const ok =
    Array.isArray(results) &&
    results.every(
      (r) =>
        r &&
        typeof r === 'object' &&
        Number.isSafeInteger((r as { index?: unknown }).index) &&
        typeof (r as { relevance_score?: unknown }).relevance_score === 'number',
    );
  if (!ok) throw new UpstreamError('protocol', 'the upstream answer is not a list of rerank results');
  return json as T;
}

/** The events of a Responses stream, as OpenAI sent them, until the one that ends it; an error event ends it too. */
async function* responseEvents(source: AsyncIterable<SseEvent>): AsyncGenerator<ResponseEvent> {
  for await (const ev of source) {
    const parsed = eventObject(ev.data) as ResponseEvent & { message?: unknown };
    if (parsed.type === 'error')
      throw new UpstreamError(
        'protocol',
        'the upstream reported an error inside the stream',
        undefined,
        str(parsed.message),
      );
    yield parsed;
    if (
      parsed.type === 'response.completed' ||
      parsed.type === 'response.incomplete' ||
      parsed.type === 'response.failed'
    )
      return;
  }
  throw new UpstreamError('protocol', 'the upstream stream ended without response.completed');
}

/**
 * The events of a speech stream (`stream_format: sse`) until `speech.audio.done`, which carries the usage; an error
 * event, or a stream that ends before it (the audio is incomplete), is a failure.
 */
export async function* speechEvents(source: AsyncIterable<SseEvent>): AsyncGenerator<SpeechEvent> {
  for await (const ev of source) {
    if (ev.data === '[DONE]') break;
    const parsed = eventObject(ev.data) as { type?: unknown; audio?: unknown; error?: { message?: unknown } };
    if (parsed.type === 'error' || parsed.error)
      throw new UpstreamError(
        'protocol',
        'the upstream reported an error inside the stream',
        undefined,
        str(parsed.error?.message),
      );
    if (parsed.type === 'speech.audio.delta' && typeof parsed.audio !== 'string')
      throw new UpstreamError('protocol', 'the upstream sent audio that is not base64 text');
    yield parsed as SpeechEvent;
    if (parsed.type === 'speech.audio.done') return;
  }
  throw new UpstreamError('protocol', 'the upstream stream ended without speech.audio.done');
}

/** Speech for the upstream: its model id; the audio comes as bytes unless events were asked for. */
export const speechAdapter = {
  request: (body: SpeechRequest, ctx: CallContext) => ({ ...body, model: ctx.model }),
  bytes: (body: SpeechRequest) => body.stream_format !== 'sse',
  stream: (events: AsyncIterable<SseEvent>) => speechEvents(events),
};

/** A transcript: JSON with its `text` (the gateway always asks for json or verbose_json); else a protocol failure. */
export function transcript<T>(json: unknown): T {
  if (typeof object<{ text?: unknown }>(json).text !== 'string')
    throw new UpstreamError('protocol', 'the upstream answer is not a transcript (no text)');
  return json as T;
}

/** A multipart request for the upstream: the client's fields and files, with the upstream's model id. */
export const formOf = (body: object, ctx: CallContext) => new FormBody({ ...body, model: ctx.model });

/** An image edit for the upstream: as a generation's body (base64 asked for where the model takes it), as a form. */
export const imageEditForm = (body: object, ctx: CallContext) =>
  new FormBody(imageBody(body as ImageRequest, ctx) as Record<string, unknown>);

/** A Responses request for the upstream: its model id, the allowance, and nothing stored there (the gateway stores). */
const responsesBody = (body: ResponsesRequest, ctx: CallContext) => {
  const out = fieldsOf(body, ['previous_response_id']); // built field by field: see fieldsOf
  out.model = ctx.model;
  out.max_output_tokens = ctx.maxOutputTokens;
  out.stream = ctx.stream;
  out.store = false;
  return out;
};

export const openai = defineProvider({
  type: 'openai',
  genAi: 'openai',
  settings: { output_limit: { enum: [...OUTPUT_LIMITS] } },
  headers: (c): Record<string, string> => (c.api_key ? { authorization: `Bearer ${c.api_key}` } : {}),
  operations: {
    chat: {
      path: () => '/chat/completions',
      request: chatBody,
      asWritten: true,
      response: object,
      stream: (events) => untilDone<ChatChunk>(events),
    },
    completions: {
      path: () => '/completions',
      request: completionBody,
      asWritten: true,
      response: object,
      stream: (events) => untilDone<CompletionResponse>(events),
    },
    embeddings: {
      path: () => '/embeddings',
      request: (body, ctx) => ({ ...body, model: ctx.model }),
      asWritten: true,
      response: embeddingList,
    },
    images: {
      path: () => '/images/generations',
      request: imageBody,
      asWritten: true,
      response: imageList,
    },
    imageEdits: { path: () => '/images/edits', request: imageEditForm, response: imageList },
    speech: { path: () => '/audio/speech', ...speechAdapter },
    transcriptions: { path: () => '/audio/transcriptions', request: formOf, response: transcript },
    translations: { path: () => '/audio/translations', request: formOf, response: transcript },
    responses: {
      path: () => '/responses',
      request: responsesBody,
      asWritten: true,
      response: object,
      stream: (events) => responseEvents(events),
    },
    moderations: {
      path: () => '/moderations',
      request: (body, ctx) => ({ ...body, model: ctx.model }),
      asWritten: true,
      response: moderationList,
    },
    // Not OpenAI's own: vLLM, Jina and Cohere (v2, base_url https://api.cohere.com/v2) serve POST {base_url}/rerank.
    rerank: {
      path: () => '/rerank',
      request: (body, ctx) => ({ ...body, model: ctx.model }),
      asWritten: true,
      response: rerankList,
    },
  },
});
