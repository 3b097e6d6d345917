/**
 * The gateway's operations: resolve the model for the key, run it on its routes, and shape the answer as OpenAI's:
 * the `model` the client asked for, usage chunks only when asked for, base64 or float embeddings as asked.
 */
import type { Config, ModelConfig } from '../config';
import { errors } from '../errors';
import type { ApiKey } from '../accounts/keys';
import { MockProvider } from './providers/mock';
import { OpenAIProvider } from './providers/openai';
import { ModelRegistry, type Endpoint } from './registry';
import { Router } from './router';
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  CompletionRequest,
  CompletionResponse,
  EmbeddingRequest,
  EmbeddingResponse,
  Model,
  Provider,
  Usage,
} from './types';

/** A started stream: its first chunk has arrived (so the route is settled) and the rest follows. */
export interface ChunkStream<T> {
  chunks: AsyncIterable<T>;
  /** The usage the upstream reported, once the stream has ended (null if it never did). */
  usage(): Usage | null;
}

export class Gateway {
  readonly models: ModelRegistry;
  private readonly router: Router;

  constructor(
    config: Config,
    private readonly providers: Map<string, Provider> = createProviders(config),
  ) {
    this.models = new ModelRegistry(config);
    this.router = new Router(providers);
  }

  listModels(key: ApiKey): Model[] {
    return this.models.list(key);
  }

  getModel(id: string, key: ApiKey): Model {
    return this.models.describe(id, key);
  }

  async chat(body: ChatRequest, key: ApiKey, signal: AbortSignal): Promise<ChatResponse> {
    const model = this.resolve(body.model, key, 'chat');
    const res = await this.router.run(model, (p, r) => p.chat({ body, model: r.model, signal }));
    return { ...res, model: model.id };
  }

  async chatStream(body: ChatRequest, key: ApiKey, signal: AbortSignal): Promise<ChunkStream<ChatChunk>> {
    const model = this.resolve(body.model, key, 'chat');
    return this.stream(model, body.stream_options?.include_usage === true, (p, r) => p.chatStream({ body, model: r.model, signal }));
  }

  async completion(body: CompletionRequest, key: ApiKey, signal: AbortSignal): Promise<CompletionResponse> {
    const model = this.resolve(body.model, key, 'completions');
    if (model.kind === 'chat') {
      const chat = asChatRequest(body, model);
      const res = await this.router.run(model, (p, r) => p.chat({ body: chat, model: r.model, signal }));
      return { ...chatToCompletion(res), model: model.id };
    }
    const res = await this.router.run(model, (p, r) => p.completion({ body, model: r.model, signal }));
    return { ...res, model: model.id };
  }

  async completionStream(body: CompletionRequest, key: ApiKey, signal: AbortSignal): Promise<ChunkStream<CompletionResponse>> {
    const model = this.resolve(body.model, key, 'completions');
    const includeUsage = body.stream_options?.include_usage === true;
    if (model.kind === 'chat') {
      const chat = asChatRequest(body, model);
      return this.stream(model, includeUsage, (p, r) => mapStream(p.chatStream({ body: chat, model: r.model, signal }), chatChunkToCompletion));
    }
    return this.stream(model, includeUsage, (p, r) => p.completionStream({ body, model: r.model, signal }));
  }

  async embeddings(body: EmbeddingRequest, key: ApiKey, signal: AbortSignal): Promise<EmbeddingResponse> {
    const model = this.resolve(body.model, key, 'embeddings');
    const res = await this.router.run(model, (p, r) => p.embeddings({ body, model: r.model, signal }));
    const base64 = body.encoding_format === 'base64';
    return {
      ...res,
      model: model.id,
      data: res.data.map((d) => ({ ...d, embedding: base64 ? toBase64(d.embedding) : toFloats(d.embedding) })),
    };
  }

  async close(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.close()));
  }

  private resolve(id: string, key: ApiKey, endpoint: Endpoint): ModelConfig {
    return this.models.resolve(id, key, endpoint);
  }

  /**
   * Starts a stream on the first route that delivers a first chunk. Rewrites `model`, records usage, and drops the
   * usage chunk (and the `usage` keys) unless the client asked for them with stream_options.include_usage.
   */
  private async stream<T extends { model: string; choices: unknown[]; usage?: Usage | null }>(
    model: ModelConfig,
    includeUsage: boolean,
    open: (p: Provider, r: { model: string }) => AsyncIterable<T>,
  ): Promise<ChunkStream<T>> {
    let usage: Usage | null = null;
    const started = await this.router.run(model, async (p, r) => {
      const it = open(p, r)[Symbol.asyncIterator]();
      const first = await it.next();
      return { it, first };
    });
    const shape = (chunk: T): T | null => {
      if (chunk.usage) usage = chunk.usage;
      if (includeUsage) return { ...chunk, model: model.id };
      if (chunk.choices.length === 0 && chunk.usage) return null;
      const { usage: _dropped, ...rest } = chunk;
      return { ...rest, model: model.id } as T;
    };
    async function* chunks(): AsyncGenerator<T> {
      const { it, first } = started;
      try {
        for (let r = first; !r.done; r = await it.next()) {
          const out = shape(r.value);
          if (out) yield out;
        }
      } finally {
        await it.return?.();
      }
    }
    return { chunks: chunks(), usage: () => usage };
  }
}

export function createProviders(config: Config): Map<string, Provider> {
  const out = new Map<string, Provider>();
  for (const p of Object.values(config.providers)) {
    out.set(p.name, p.type === 'mock' ? new MockProvider(p) : new OpenAIProvider(p));
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

function chatToCompletion(res: ChatResponse): CompletionResponse {
  return {
    id: completionId(res.id),
    object: 'text_completion',
    created: res.created,
    model: res.model,
    choices: res.choices.map((c) => ({
      index: c.index,
      text: c.message.content ?? '',
      logprobs: null,
      finish_reason: c.finish_reason === 'length' || c.finish_reason === 'content_filter' ? c.finish_reason : 'stop',
    })),
    ...(res.usage ? { usage: res.usage } : {}),
  };
}

function chatChunkToCompletion(chunk: ChatChunk): CompletionResponse {
  return {
    id: completionId(chunk.id),
    object: 'text_completion',
    created: chunk.created,
    model: chunk.model,
    choices: chunk.choices.map((c) => ({
      index: c.index,
      text: c.delta?.content ?? '',
      logprobs: null,
      finish_reason: (c.finish_reason === null ? null : c.finish_reason === 'length' || c.finish_reason === 'content_filter' ? c.finish_reason : 'stop') as never,
    })),
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
