/**
 * Provider `vertex`: Google Cloud's Vertex AI, one project and location, two publishers behind one address.
 *
 * - Which publisher serves a route's model: a model whose id starts with `claude-` is Anthropic's
 *   (`claude-sonnet-4@20250514`), any other is Google's (`gemini-2.5-flash`, `text-embedding-005`). One rule, by
 *   the id Vertex itself uses, so a route says nothing more than its model.
 * - Google's models: `generateContent` and `streamGenerateContent?alt=sse` under
 *   `/v1/projects/{project}/locations/{location}/publishers/google/models/{model}`, through the Gemini translation
 *   (the same body and answers as the Gemini API); embeddings through `:predict` (text-embedding-005,
 *   gemini-embedding-001), whose answers report their tokens.
 * - Anthropic's models: `:rawPredict` and `:streamRawPredict` under `.../publishers/anthropic/models/{model}`, the
 *   Messages API with the model in the URL rather than the body and `anthropic_version: vertex-2023-10-16`. Chat goes
 *   through the Anthropic translation; `/v1/messages` is served as the client wrote it (Gemini models reach it
 *   through the gateway's bridge to chat).
 * - Authentication: a service account's OAuth token in `Authorization: Bearer`, per request (auth.ts).
 */
import type { ChatChunk, EmbeddingRequest, EmbeddingResponse, MessagesRequest } from '../../types';
import { UpstreamError } from '../../types';
import { chatStream, messageEvents, native } from '../anthropic';
import { fromAnthropicResponse, toAnthropicRequest, type AnthropicResponse } from '../anthropic/translate';
import { readError, signatureStore } from '../gemini';
import { ChatStreamTranslator, fromGeminiResponse, toGeminiRequest } from '../gemini/translate';
import type { GenerateContentResponse } from '../gemini/wire';
import { eventObjects } from '../http';
import { object } from '../openai';
import { badRequest, unixNow } from '../shared';
import { defineProvider, type CallContext } from '../types';
import { AccessTokens } from './auth';

/** The Messages API version Vertex AI takes, in the body. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** The longest a token exchange may take before the request goes to its next route. */
const TOKEN_TIMEOUT_MS = 30_000;

interface State {
  tokens: AccessTokens;
  /** Gemini's thought signatures, by model and tool call id (see the gemini provider). */
  signatures: Map<string, string>;
}

/** The publisher of a route's model (see above). */
export const publisher = (model: string): 'anthropic' | 'google' =>
  model.startsWith('claude-') ? 'anthropic' : 'google';

/** A path segment; `@` kept as Vertex writes versions (`claude-sonnet-4@20250514`), the rest escaped. */
const segment = (s: string) => encodeURIComponent(s).replace(/%40/g, '@');

/** The model's resource under the provider's project and location. */
function resource(ctx: CallContext<State>): string {
  const { project, location } = ctx.config.settings as { project: string; location: string };
  const base = `/v1/projects/${segment(project)}/locations/${segment(location)}`;
  return `${base}/publishers/${publisher(ctx.model)}/models/${segment(ctx.model)}`;
}

const claude = (ctx: CallContext<State>) => publisher(ctx.model) === 'anthropic';

/** The path of a generation: Anthropic's raw predictions or Gemini's generateContent, streamed or not. */
function generate(ctx: CallContext<State>): string {
  if (claude(ctx)) return `${resource(ctx)}:${ctx.stream ? 'streamRawPredict' : 'rawPredict'}`;
  return `${resource(ctx)}:${ctx.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
}

/**
 * A Messages body as Vertex takes it: the model is in the URL (Vertex refuses it in the body), the version here.
 * `service_tier` is Anthropic's own API's (priority capacity, which the policy pins to `standard_only`): Vertex has
 * no such tier in a request (its capacity is bought as provisioned throughput), so it is not sent.
 */
function onVertex<T extends { model?: unknown; service_tier?: unknown }>(
  body: T,
): Omit<T, 'model' | 'service_tier'> & { anthropic_version: string } {
  const { model: _model, service_tier: _tier, ...rest } = body;
  return { ...rest, anthropic_version: VERTEX_ANTHROPIC_VERSION };
}

/** One embedding per text, Vertex's `predict` instances; token arrays cannot be sent. */
function toPredict(body: EmbeddingRequest): { instances: { content: string }[]; parameters?: object } {
  const input = body.input as unknown;
  const texts = typeof input === 'string' ? [input] : Array.isArray(input) ? input : [];
  if (!texts.length || !texts.every((x): x is string => typeof x === 'string')) {
    throw badRequest('vertex', 'token arrays are not supported by this model');
  }
  const dims = typeof body.dimensions === 'number' ? { parameters: { outputDimensionality: body.dimensions } } : {};
  return { instances: texts.map((content) => ({ content })), ...dims };
}

interface Prediction {
  embeddings?: { values?: number[]; statistics?: { token_count?: number } };
}

/** Vertex's predictions → OpenAI's list; the tokens it counted per text are the usage, when it reports each. */
function fromPredict(json: unknown, model: string, count: number): EmbeddingResponse {
  const predictions = (json as { predictions?: Prediction[] })?.predictions;
  if (
    !Array.isArray(predictions) ||
    predictions.length !== count ||
    !predictions.every((p) => Array.isArray(p?.embeddings?.values))
  ) {
    throw new UpstreamError('protocol', 'the upstream answered with embeddings we cannot read');
  }
  const tokens = predictions.map((p) => p.embeddings!.statistics?.token_count);
  const reported = tokens.every((t) => Number.isInteger(t) && t! >= 0);
  const sum = tokens.reduce<number>((s, t) => s + (t ?? 0), 0);
  return {
    object: 'list',
    data: predictions.map((p, index) => ({ object: 'embedding', index, embedding: p.embeddings!.values! })),
    model,
    ...(reported ? { usage: { prompt_tokens: sum, total_tokens: sum } } : {}),
  } as EmbeddingResponse;
}

export const vertex = defineProvider<State>({
  type: 'vertex',
  genAi: 'gcp.vertex_ai',
  // `global` has no regional host.
  baseUrl: (s) =>
    s.location === 'global'
      ? 'https://aiplatform.googleapis.com'
      : `https://${String(s.location)}-aiplatform.googleapis.com`,
  settings: {
    project: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9.:_-]*$' },
    location: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]*$' },
    // A path to the key file, or its JSON (through `${ENV}`); never echoed in a configuration error.
    credentials: { type: 'string', minLength: 1 },
  },
  required: ['project', 'location', 'credentials'],
  secrets: ['credentials'],
  // Claude on Vertex bills cache writes as Anthropic does (1.25×, 2× for an hour); reads are left at input, the
  // most any of its models bills for them (Gemini's discounts differ by model: set `cached_input`).
  cache: { cache_write: 1250, cache_write_1h: 2000 },
  errors: readError, // Google's `{error:{message,status}}`; Anthropic's `{error:{message}}` reads the same way
  state: (config) => ({
    tokens: new AccessTokens(
      config.name,
      String(config.settings.credentials),
      Math.min(TOKEN_TIMEOUT_MS, config.timeouts.first_byte_ms),
    ),
    signatures: new Map(),
  }),
  sign: async (_request, _config, state) => ({ authorization: `Bearer ${await state.tokens.get()}` }),
  unauthorized: (state) => state.tokens.forget(),
  // Anthropic's Messages natively for Claude only; the others go through chat.
  natively: (op, model) => op !== 'messages' || publisher(model) === 'anthropic',
  operations: {
    chat: {
      path: generate,
      request: (body, ctx) =>
        claude(ctx)
          ? onVertex(toAnthropicRequest(body, ctx.model, ctx.maxOutputTokens, ctx.stream))
          : toGeminiRequest(
              { ...body, max_completion_tokens: ctx.maxOutputTokens },
              signatureStore(ctx.state.signatures, ctx.model),
            ),
      response: (json, ctx) =>
        claude(ctx)
          ? fromAnthropicResponse(json as AnthropicResponse, unixNow())
          : fromGeminiResponse(
              json as GenerateContentResponse,
              ctx.model,
              signatureStore(ctx.state.signatures, ctx.model),
            ),
      stream: (events, ctx) => (claude(ctx) ? chatStream(events, ctx.model) : geminiStream(events, ctx)),
    },
    messages: {
      path: generate,
      request: (body, ctx) => onVertex(native(body as MessagesRequest, ctx.model, ctx.maxOutputTokens, ctx.stream)),
      response: object,
      stream: (source) => messageEvents(source),
    },
    embeddings: {
      path: (ctx) => `${resource(ctx)}:predict`,
      request: (body) => toPredict(body),
      response: (json, ctx, body) => fromPredict(json, ctx.model, toPredict(body).instances.length),
    },
  },
});

async function* geminiStream(
  events: Parameters<typeof eventObjects>[0],
  ctx: CallContext<State>,
): AsyncGenerator<ChatChunk> {
  const t = new ChatStreamTranslator(ctx.model, signatureStore(ctx.state.signatures, ctx.model));
  for await (const ev of eventObjects(events)) yield* t.push(ev as GenerateContentResponse);
  yield* t.end();
}
