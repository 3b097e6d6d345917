/**
 * The gateway's operations: resolve the model for the key, run it on its routes, and shape the answer as OpenAI's:
 * the `model` the client asked for, usage chunks only when asked for, base64 or float embeddings as asked.
 * Each operation also returns a Meter: the request's usage, and whether the upstream reported it or we counted it.
 */
import type { Config, ModelConfig, RouteConfig } from '../config';
import { errors } from '../errors';
import type { ApiKey } from '../accounts/keys';
import { createProvider } from './providers';
import { ModelRegistry, type Endpoint } from './registry';
import { Router, explain, within } from './router';
import { countChatPrompt, countCompletionPrompt, countEmbeddingInput, countText } from './tokens';
import {
  UpstreamError,
  type ChatChunk,
  type ChatRequest,
  type ChatResponse,
  type CompletionRequest,
  type CompletionResponse,
  type EmbeddingRequest,
  type EmbeddingResponse,
  type Model,
  type Provider,
  type Usage,
} from './types';

/** What one request used, and how we know. */
export interface Meter {
  model: string;
  /** The provider of the route that answered. */
  provider: string;
  usage: Usage;
  /** `upstream`: the upstream reported the usage; `tokenizer`: it did not (or the stream was cut), so we counted. */
  counted: 'upstream' | 'tokenizer';
}

export interface Answer<T> {
  body: T;
  meter: Meter;
}

/** A started stream: its first chunk has arrived (so the route is settled) and the rest follows. */
export interface ChunkStream<T> {
  chunks: AsyncIterable<T>;
  /** The request's usage once the stream has ended, however it ended. */
  meter(): Meter;
}

export class Gateway {
  readonly models: ModelRegistry;
  readonly router: Router;

  constructor(
    config: Config,
    private readonly providers: Map<string, Provider> = createProviders(config),
  ) {
    this.models = new ModelRegistry(config);
    this.router = new Router(providers, config.routing);
  }

  listModels(key: ApiKey): Model[] {
    return this.models.list(key);
  }

  getModel(id: string, key: ApiKey): Model {
    return this.models.describe(id, key);
  }

  async chat(body: ChatRequest, key: ApiKey, signal: AbortSignal): Promise<Answer<ChatResponse>> {
    const model = this.models.resolve(body.model, key, 'chat');
    const { value, route, finish } = await this.router.run(model, signal, (p, r, s) => p.chat(call(body, model, r, s)));
    finish();
    const meter = this.meter(model, route, value.usage, () => countChatPrompt(body), () => countText(value.choices.map(chatText).join('')));
    return { body: { ...value, model: model.id, usage: meter.usage }, meter };
  }

  async chatStream(body: ChatRequest, key: ApiKey, signal: AbortSignal): Promise<ChunkStream<ChatChunk>> {
    const model = this.models.resolve(body.model, key, 'chat');
    return this.stream(model, body, signal, () => countChatPrompt(body), chunkText, (p, r, s) => p.chatStream(call(body, model, r, s)));
  }

  async completion(body: CompletionRequest, key: ApiKey, signal: AbortSignal): Promise<Answer<CompletionResponse>> {
    const model = this.models.resolve(body.model, key, 'completions');
    const prompt = () => countCompletionPrompt(body);
    if (model.kind === 'chat') {
      const chat = asChatRequest(body, model);
      const { value, route, finish } = await this.router.run(model, signal, (p, r, s) => p.chat(call(chat, model, r, s)));
      finish();
      const res = chatToCompletion(value);
      const meter = this.meter(model, route, value.usage, () => countChatPrompt(chat), () => countText(res.choices.map((c) => c.text).join('')));
      return { body: { ...res, model: model.id, usage: meter.usage }, meter };
    }
    const { value, route, finish } = await this.router.run(model, signal, (p, r, s) => p.completion(call(body, model, r, s)));
    finish();
    const meter = this.meter(model, route, value.usage, prompt, () => countText(value.choices.map((c) => c.text).join('')));
    return { body: { ...value, model: model.id, usage: meter.usage }, meter };
  }

  async completionStream(body: CompletionRequest, key: ApiKey, signal: AbortSignal): Promise<ChunkStream<CompletionResponse>> {
    const model = this.models.resolve(body.model, key, 'completions');
    const text = (c: CompletionResponse) => c.choices.map((x) => x.text ?? '').join('');
    if (model.kind === 'chat') {
      const chat = asChatRequest(body, model);
      return this.stream(model, body, signal, () => countChatPrompt(chat), text, (p, r, s) =>
        mapStream(p.chatStream(call(chat, model, r, s)), chatChunkToCompletion),
      );
    }
    return this.stream(model, body, signal, () => countCompletionPrompt(body), text, (p, r, s) => p.completionStream(call(body, model, r, s)));
  }

  async embeddings(body: EmbeddingRequest, key: ApiKey, signal: AbortSignal): Promise<Answer<EmbeddingResponse>> {
    const model = this.models.resolve(body.model, key, 'embeddings');
    const { value, route, finish } = await this.router.run(model, signal, (p, r, s) => p.embeddings(call(body, model, r, s)));
    finish();
    const base64 = body.encoding_format === 'base64';
    const counted = !isCount(value.usage?.prompt_tokens);
    const prompt = counted ? countEmbeddingInput(body) : value.usage.prompt_tokens;
    const meter: Meter = {
      model: model.id,
      provider: route.provider,
      usage: { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt },
      counted: counted ? 'tokenizer' : 'upstream',
    };
    return {
      body: {
        ...value,
        model: model.id,
        usage: { prompt_tokens: prompt, total_tokens: prompt },
        data: value.data.map((d) => ({ ...d, embedding: base64 ? toBase64(d.embedding) : toFloats(d.embedding) })),
      },
      meter,
    };
  }

  /** Refuse new upstream calls (503) while the process finishes the ones in flight. */
  drain(): void {
    this.router.draining = true;
  }

  async close(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.close()));
  }

  private meter(model: ModelConfig, route: RouteConfig, usage: Usage | null | undefined, prompt: () => number, completion: () => number): Meter {
    if (isUsage(usage)) {
      return { model: model.id, provider: route.provider, usage, counted: 'upstream' };
    }
    const p = prompt();
    const c = completion();
    return { model: model.id, provider: route.provider, usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c }, counted: 'tokenizer' };
  }

  /**
   * Starts a stream on the first route that delivers a first chunk within its time-to-first-byte limit. Then:
   * rewrites `model`; keeps the upstream's usage (or counts the text that went by, if the upstream gives none or
   * the stream is cut); passes the usage chunk on only when the client asked with stream_options.include_usage
   * (and makes one from our count if the upstream sent none); enforces the idle limit between chunks.
   */
  private async stream<T extends { id: string; created: number; object: string; model: string; choices: unknown[]; usage?: Usage | null }>(
    model: ModelConfig,
    body: { stream_options?: { include_usage?: boolean } | null },
    signal: AbortSignal,
    promptTokens: () => number,
    textOf: (chunk: T) => string,
    open: (p: Provider, r: RouteConfig, s: AbortSignal) => AsyncIterable<T>,
  ): Promise<ChunkStream<T>> {
    const includeUsage = body.stream_options?.include_usage === true;
    const started = await this.router.run(model, signal, async (p, r, s) => {
      const firstByte = new AbortController(); // aborted when no first chunk came in time: cancels the upstream call
      const it = open(p, r, AbortSignal.any([s, firstByte.signal]))[Symbol.asyncIterator]();
      try {
        return { it, first: await within(it.next(), r.timeouts.first_byte_ms, firstByte, 'first chunk') };
      } catch (e) {
        void it.return?.().catch(() => undefined);
        throw e;
      }
    });
    const { route, controller, finish } = started;
    const { it, first } = started.value;
    let usage: Usage | null = null;
    let generated = '';
    let meter: Meter | null = null;
    const router = this.router;
    let promptCount: number | undefined; // counted once: lease renewals read the meter of a running stream
    const measure = (): Meter => {
      if (usage) return { model: model.id, provider: route.provider, usage, counted: 'upstream' };
      const p = (promptCount ??= promptTokens());
      const c = countText(generated);
      return { model: model.id, provider: route.provider, usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c }, counted: 'tokenizer' };
    };
    async function* chunks(): AsyncGenerator<T> {
      let last: T | undefined;
      try {
        for (let r = first; !r.done; r = await within(it.next(), route.timeouts.idle_ms, controller, 'chunk')) {
          const chunk = r.value;
          last = chunk;
          if (isUsage(chunk.usage)) usage = chunk.usage;
          generated += textOf(chunk);
          if (chunk.choices.length === 0 && chunk.usage) continue; // the usage chunk goes out last, below
          if (includeUsage) {
            yield { ...chunk, model: model.id, usage: null };
          } else {
            const { usage: _hidden, ...rest } = chunk;
            yield { ...rest, model: model.id } as T;
          }
        }
        meter = measure();
        if (includeUsage && last) {
          yield { id: last.id, object: last.object, created: last.created, model: model.id, choices: [], usage: meter.usage } as unknown as T;
        }
      } catch (e) {
        const failure = explain(e, controller.signal);
        if (failure && failure.reason !== 'aborted') router.failed(route);
        throw failure ?? e;
      } finally {
        meter ??= measure();
        finish();
        await it.return?.();
      }
    }
    return { chunks: chunks(), meter: () => meter ?? measure() };
  }
}

const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

/** Usage an upstream reported that can be billed: whole, non-negative token counts (anything else is counted by us). */
function isUsage(u: Usage | null | undefined): u is Usage {
  return !!u && isCount(u.prompt_tokens) && isCount(u.completion_tokens);
}

export function createProviders(config: Config): Map<string, Provider> {
  const out = new Map<string, Provider>();
  for (const p of Object.values(config.providers)) out.set(p.name, createProvider(p));
  return out;
}

function call<B>(body: B, model: ModelConfig, route: RouteConfig, signal: AbortSignal) {
  return { body, model: route.model, maxOutputTokens: model.max_output_tokens, signal };
}

function chatText(c: ChatResponse['choices'][number]): string {
  return (c.message.content ?? '') + (c.message.tool_calls ?? []).map((t) => ('function' in t ? t.function.name + t.function.arguments : '')).join('');
}

function chunkText(chunk: ChatChunk): string {
  let out = '';
  for (const c of chunk.choices) {
    out += c.delta?.content ?? '';
    for (const t of c.delta?.tool_calls ?? []) out += (t.function?.name ?? '') + (t.function?.arguments ?? '');
  }
  return out;
}

async function* mapStream<A, B>(source: AsyncIterable<A>, f: (a: A) => B): AsyncGenerator<B> {
  for await (const a of source) yield f(a);
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

function completionId(chatId: string): string {
  return `cmpl-${chatId.replace(/^chatcmpl-/, '')}`;
}

type CompletionFinish = CompletionResponse['choices'][number]['finish_reason'];
const toCompletionFinish = (f: string | null): CompletionFinish =>
  (f === null ? null : f === 'length' || f === 'content_filter' ? f : 'stop') as CompletionFinish;

function chatToCompletion(res: ChatResponse): CompletionResponse {
  return {
    id: completionId(res.id),
    object: 'text_completion',
    created: res.created,
    model: res.model,
    choices: res.choices.map((c) => ({ index: c.index, text: c.message.content ?? '', logprobs: null, finish_reason: toCompletionFinish(c.finish_reason) })),
    ...(res.usage ? { usage: res.usage } : {}),
  };
}

function chatChunkToCompletion(chunk: ChatChunk): CompletionResponse {
  return {
    id: completionId(chunk.id),
    object: 'text_completion',
    created: chunk.created,
    model: chunk.model,
    choices: chunk.choices.map((c) => ({ index: c.index, text: c.delta?.content ?? '', logprobs: null, finish_reason: toCompletionFinish(c.finish_reason ?? null) })),
    ...(chunk.usage ? { usage: chunk.usage } : {}),
  };
}

/** Embeddings as base64 of little-endian float32, the way OpenAI sends them. */
function toBase64(e: number[] | string): string {
  if (typeof e === 'string') return e;
  const buf = Buffer.alloc(e.length * 4);
  e.forEach((x, i) => buf.writeFloatLE(x, i * 4));
  return buf.toString('base64');
}

function toFloats(e: number[] | string): number[] {
  if (typeof e !== 'string') return e;
  const buf = Buffer.from(e, 'base64');
  return Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(i * 4));
}

export { UpstreamError };
