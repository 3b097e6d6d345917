/**
 * A paid upstream call from start to end: resolve the model, admit the request (rate limits, hold), send it with
 * the output allowance the hold covers, and settle what it used — however it ends: an answer, an upstream error,
 * a stream that completes, breaks off, or whose client goes away.
 */
import type { App } from '../app';
import type { KeyPrincipal } from '../accounts/keys';
import type { Answer, ChunkStream, Meter } from '../gateway/gateway';
import type { Endpoint } from '../gateway/registry';
import { countChatPrompt, countCompletionPrompt, countEmbeddingInput } from '../gateway/tokens';
import { UpstreamError, type ChatRequest, type CompletionRequest, type EmbeddingRequest } from '../gateway/types';
import { ApiError } from '../errors';
import type { ModelConfig } from '../config';

type Body = ChatRequest | CompletionRequest | EmbeddingRequest;

export interface MeteredInput<B extends Body> {
  app: App;
  principal: KeyPrincipal;
  requestId: string;
  endpoint: Endpoint;
  body: B;
}

/** The legacy completions API generates 16 tokens when the request sets no max_tokens. */
const LEGACY_DEFAULT_MAX_TOKENS = 16;

export async function metered<B extends Body, T>(
  input: MeteredInput<B>,
  run: (body: B) => Promise<Answer<T>>,
): Promise<{ body: T; headers: Record<string, string> }> {
  const { admission, value: answer, ttfbMs } = await call(input, run);
  await admission.settle({ status: 200, meter: answer.meter, ttfbMs });
  return { body: answer.body, headers: admission.headers };
}

export async function meteredStream<B extends Body, T>(
  input: MeteredInput<B>,
  run: (body: B) => Promise<ChunkStream<T>>,
): Promise<ChunkStream<T> & { headers: Record<string, string> }> {
  const { admission, value: stream, ttfbMs } = await call(input, run);
  admission.track(() => stream.meter().usage);
  async function* chunks(): AsyncGenerator<T> {
    let status = 499; // unless the stream completes or fails, its client went away
    try {
      yield* stream.chunks;
      status = 200;
    } catch (e) {
      status = e instanceof UpstreamError && e.reason === 'aborted' ? 499 : 502;
      throw e;
    } finally {
      await admission.settle({ status, meter: stream.meter(), ttfbMs });
    }
  }
  return { chunks: chunks(), meter: stream.meter, headers: admission.headers };
}

/** Admits the request and makes the upstream call; a call that fails releases its hold and keeps the limit headers. */
async function call<B extends Body, V>(input: MeteredInput<B>, run: (body: B) => Promise<V>) {
  const { admission, body, model } = await admit(input);
  const started = Date.now();
  try {
    const value = await run(body);
    return { admission, value, ttfbMs: Date.now() - started };
  } catch (e) {
    const status = e instanceof ApiError ? e.status : 500;
    // A client that leaves before the answer pays for its prompt, which the upstream has been sent; an upstream
    // that failed to answer costs nothing.
    const meter = status === 499 ? promptOnly(input.endpoint, body, model.id) : null;
    await admission.settle({ status, meter });
    if (e instanceof ApiError) Object.assign(e.headers, admission.headers);
    throw e;
  }
}

async function admit<B extends Body>(input: MeteredInput<B>) {
  const { app, principal, endpoint, body } = input;
  const model = app.gateway.models.resolve(body.model, principal.key, endpoint);
  const { promptTokens, outputTokens, choices } = estimate(endpoint, body, model);
  const admission = await app.billing.admit({ requestId: input.requestId, principal, model, endpoint, promptTokens, outputTokens });
  return { admission, model, body: withOutputLimit(endpoint, body, Math.floor(admission.outputTokens / choices)) };
}

function promptOnly(endpoint: Endpoint, body: Body, model: string): Meter {
  const prompt =
    endpoint === 'embeddings'
      ? countEmbeddingInput(body as EmbeddingRequest)
      : endpoint === 'chat'
        ? countChatPrompt(body as ChatRequest)
        : countCompletionPrompt(body as CompletionRequest);
  return { model, provider: '', usage: { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt }, counted: 'tokenizer' };
}

function estimate(endpoint: Endpoint, body: Body, model: ModelConfig) {
  if (endpoint === 'embeddings') return { promptTokens: countEmbeddingInput(body as EmbeddingRequest), outputTokens: 0, choices: 1 };
  const choices = Math.max(1, (body as ChatRequest).n ?? 1);
  if (endpoint === 'chat') {
    const chat = body as ChatRequest;
    const perChoice = chat.max_completion_tokens ?? chat.max_tokens ?? model.max_output_tokens;
    return { promptTokens: countChatPrompt(chat, true), outputTokens: perChoice * choices, choices };
  }
  const legacy = body as CompletionRequest;
  return { promptTokens: countCompletionPrompt(legacy), outputTokens: (legacy.max_tokens ?? LEGACY_DEFAULT_MAX_TOKENS) * choices, choices };
}

/**
 * The upstream may generate at most what the hold covers: the client's own limit field is set to it (lowered when
 * the balance covers less); a chat request without one gets max_completion_tokens, a legacy one max_tokens.
 */
function withOutputLimit<B extends Body>(endpoint: Endpoint, body: B, perChoice: number): B {
  if (endpoint === 'embeddings') return body;
  if (endpoint === 'completions') return { ...body, max_tokens: perChoice };
  const chat = body as ChatRequest;
  if (chat.max_tokens != null && chat.max_completion_tokens == null) return { ...body, max_tokens: perChoice };
  return { ...body, max_completion_tokens: perChoice };
}
