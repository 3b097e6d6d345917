/** POST /v1/chat/completions: OpenAI's chat completions, served natively by every chat provider. */
import type { ModelConfig } from '../../config';
import { errors } from '../../errors';
import type { ChatChunk, ChatRequest, ChatResponse } from '../types';
import { NOT_GENERATED, OPENAI_SSE, collect, readUsage, shownUsage, withoutUsage } from './openai';
import { standardTier, withoutChatExtensions } from './policy';
import type { Operation, Reader } from './types';

export const chatReader: Reader<ChatRequest, ChatResponse, ChatChunk> = {
  usage: (res) => readUsage(res.usage),
  // Usage on a chunk that ends nothing is the usage so far (Gemini and Anthropic report it as they go): what a stream
  // cut after it has certainly cost. On the usage chunk (no choices) or a finishing chunk it is the whole request's.
  chunkUsage(chunk, previous) {
    const usage = readUsage(chunk.usage);
    if (!usage) return previous;
    return { usage, final: chunk.choices.length === 0 || chunk.choices.some((c) => c.finish_reason) };
  },
  prompt: (body) => ({ kind: 'chat', body: { messages: body.messages, tools: body.tools, functions: body.functions } }),
  answerText(res) {
    const out: string[] = [];
    for (const c of res.choices ?? []) collect(c.message, NOT_GENERATED, out);
    return out.join('');
  },
  chunkText(chunk) {
    const out: string[] = [];
    for (const c of chunk.choices) collect(c.delta, NOT_GENERATED, out);
    return out.join('');
  },
  final: (chunk) => chunk.choices.some((c) => c.finish_reason),
};

/** The tokens a predicted output may add: rejected prediction tokens are billed as completion tokens. */
export function predictionBytes(body: Pick<ChatRequest, 'prediction'>): number {
  const p = body.prediction as { content?: unknown } | null | undefined;
  if (!p) return 0;
  const out: string[] = [];
  collect(p.content, new Set(), out);
  return out.reduce((n, s) => n + Buffer.byteLength(s), 0);
}

/**
 * Audio and web search refused unless allowed, pricier tiers and Azure's "on your data" stripped (see policy.ts).
 * Legacy completions sent through chat are held to the same (their unknown fields become the chat request's).
 */
export function chatFeatures<
  T extends Pick<ChatRequest, 'audio' | 'modalities' | 'web_search_options' | 'service_tier'>,
>(body: T, model: ModelConfig): T {
  const allowed = (f: ModelConfig['allow'][number]) => model.allow.includes(f);
  if (!allowed('audio') && (body.audio != null || (body.modalities ?? []).includes('audio'))) {
    throw errors.invalidRequest(
      `Model ${model.id} does not produce audio through this gateway`,
      body.audio != null ? 'audio' : 'modalities',
    );
  }
  if (!allowed('web_search') && body.web_search_options != null) {
    throw errors.invalidRequest(`Model ${model.id} does not search the web through this gateway`, 'web_search_options');
  }
  // The answer is the same at the standard tier: served there rather than refused.
  return withoutChatExtensions(standardTier(body, model), model);
}

export const chat: Operation<ChatRequest, ChatResponse, ChatChunk> = {
  name: 'chat',
  genAi: 'chat',
  path: '/v1/chat/completions',
  upstream: 'chat',
  reader: chatReader,
  streams: (body) => body.stream === true,
  includeUsage: (body) => body.stream_options?.include_usage === true,
  output(body, model) {
    const asked = [body.max_completion_tokens, body.max_tokens].filter((n): n is number => typeof n === 'number');
    const perChoice = (asked.length ? Math.min(...asked) : model.max_output_tokens) + predictionBytes(body);
    // best_of is not OpenAI's in chat, but OpenAI-compatible servers (vLLM) generate that many and return n
    const bestOf = (body as { best_of?: unknown }).best_of;
    return {
      perChoice,
      choices: Math.max(
        1,
        body.n ?? 1,
        typeof bestOf === 'number' && Number.isFinite(bestOf) ? Math.min(Math.floor(bestOf), 128) : 1,
      ),
    };
  },
  features: (body, model) => chatFeatures(body, model),
  present: (res, p) => ({ ...res, model: p.model, usage: shownUsage(res.usage, p.usage, p.reported) }),
  presentChunk(chunk, { model, includeUsage }) {
    if (chunk.choices.length === 0 && chunk.usage) return null; // the usage chunk goes out last (tail)
    return includeUsage ? { ...chunk, model, usage: null } : { ...withoutUsage(chunk), model };
  },
  tail(last, p, includeUsage) {
    if (!includeUsage || !last) return [];
    return [
      {
        id: last.id,
        object: last.object,
        created: last.created,
        model: p.model,
        choices: [],
        usage: shownUsage(p.raw, p.usage, p.reported),
      },
    ];
  },
  framing: OPENAI_SSE,
};
