/**
 * POST /v1/completions: OpenAI's legacy completions. A completion model's provider serves it natively; on a chat
 * model it goes through chat: the prompt becomes one user message and the answer a `text_completion`.
 */
import { errors } from '../../errors';
import type { ModelConfig } from '../../config';
import type { ChatChunk, ChatRequest, ChatResponse, CompletionRequest, CompletionResponse } from '../types';
import { chatFeatures, chatReader, predictionBytes } from './chat';
import { NOT_GENERATED, OPENAI_SSE, collect, final, readUsage, shownUsage, withoutUsage } from './openai';
import type { Operation, Reader } from './types';

/** The legacy API generates 16 tokens when the request sets no max_tokens. */
export const LEGACY_DEFAULT_MAX_TOKENS = 16;

const reader: Reader<CompletionRequest, CompletionResponse, CompletionResponse> = {
  usage: (res) => readUsage(res.usage),
  chunkUsage: (chunk, previous) => final(readUsage(chunk.usage)) ?? previous,
  prompt: (body) => ({ kind: 'input', input: body.prompt }),
  answerText: (res) => texts(res),
  chunkText: (chunk) => texts(chunk),
  final: (chunk) => (chunk.choices ?? []).some((c) => c.finish_reason),
};

function texts(res: CompletionResponse): string {
  const out: string[] = [];
  for (const c of res.choices ?? []) collect(c.text, NOT_GENERATED, out);
  return out.join('');
}

/** How many prompts a request holds: a string or a token list is one; a list of strings or of token lists, many. */
function prompts(prompt: CompletionRequest['prompt']): number {
  if (!Array.isArray(prompt) || !prompt.length) return 1;
  return typeof prompt[0] === 'number' ? 1 : prompt.length;
}

const COMPLETION_ONLY = ['prompt', 'suffix', 'echo', 'best_of', 'logprobs'] as const;

/** A legacy completion on a chat model: the prompt becomes one user message. */
function asChatRequest(body: CompletionRequest, model: ModelConfig): ChatRequest {
  const prompt = Array.isArray(body.prompt) && body.prompt.length === 1 ? body.prompt[0] : body.prompt;
  if (typeof prompt !== 'string') {
    throw errors.invalidRequest(`Model ${model.id} is a chat model: its prompt must be a single string`, 'prompt');
  }
  const rest: Record<string, unknown> = { ...body };
  for (const k of COMPLETION_ONLY) delete rest[k];
  return { ...rest, model: body.model, messages: [{ role: 'user', content: prompt }] } as ChatRequest;
}

const completionId = (chatId: string) => `cmpl-${chatId.replace(/^chatcmpl-/, '')}`;

type CompletionFinish = CompletionResponse['choices'][number]['finish_reason'];
const toCompletionFinish = (f: string | null): CompletionFinish =>
  (f === null ? null : f === 'length' || f === 'content_filter' ? f : 'stop') as CompletionFinish;

/** A chat answer or chunk as a `text_completion`: the same id (cmpl-), time, model and usage; the text of each choice. */
function asCompletion(
  res: ChatResponse | ChatChunk,
  text: (i: number) => string,
  finish: (i: number) => string | null,
): CompletionResponse {
  return {
    id: completionId(res.id),
    object: 'text_completion',
    created: res.created,
    model: res.model,
    choices: res.choices.map((c, i) => ({
      index: c.index,
      text: text(i),
      logprobs: null,
      finish_reason: toCompletionFinish(finish(i)),
    })),
    ...(res.usage ? { usage: res.usage } : {}),
  };
}

const chatToCompletion = (res: ChatResponse) =>
  asCompletion(
    res,
    (i) => res.choices[i].message.content ?? '',
    (i) => res.choices[i].finish_reason,
  );

const chatChunkToCompletion = (chunk: ChatChunk) =>
  asCompletion(
    chunk,
    (i) => chunk.choices[i].delta?.content ?? '',
    (i) => chunk.choices[i].finish_reason ?? null,
  );

export const completions: Operation<CompletionRequest, CompletionResponse, CompletionResponse> = {
  name: 'completions',
  genAi: 'text_completion',
  path: '/v1/completions',
  upstream: 'completions',
  reader,
  bridge: {
    via: 'chat',
    when: (model) => model.kind === 'chat',
    request: asChatRequest,
    answer: (res) => chatToCompletion(res as ChatResponse),
    stream: () => ({ push: (chunk) => [chatChunkToCompletion(chunk as ChatChunk)], end: () => [] }),
  },
  streams: (body) => body.stream === true,
  includeUsage: (body) => body.stream_options?.include_usage === true,
  output(body) {
    // best_of generates that many completions server-side, each billed; n of them are returned; per prompt. Sent
    // through chat, a prediction (an unknown field here) goes along: its rejected tokens are billed as output.
    const perPrompt = Math.max(1, body.n ?? 1, body.best_of ?? 1);
    const perChoice =
      (body.max_tokens ?? LEGACY_DEFAULT_MAX_TOKENS) + predictionBytes(body as Pick<ChatRequest, 'prediction'>);
    return { perChoice, choices: perPrompt * prompts(body.prompt) };
  },
  // Its unknown fields become the chat request's when it goes through chat: the same rules as chat.
  features: (body, model) => chatFeatures(body as CompletionRequest & ChatRequest, model),
  present: (res, p) => ({ ...res, model: p.model, usage: shownUsage(res.usage, p.usage, p.reported) }),
  presentChunk(chunk, { model, includeUsage }) {
    if (chunk.choices.length === 0 && chunk.usage) return null;
    return includeUsage
      ? ({ ...chunk, model, usage: null } as unknown as CompletionResponse)
      : { ...withoutUsage(chunk), model };
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

export { chatReader };
