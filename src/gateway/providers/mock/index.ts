/**
 * Provider `mock`: answers in the process, deterministically (same request, same answer), for demos, the contract
 * tests and load tests. Its usage is an estimate of about four bytes a token (linear: a long prompt cannot stall
 * the process), and it echoes at most the first 200 characters of the last user message.
 */
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  CompletionRequest,
  CompletionResponse,
  EmbeddingRequest,
  EmbeddingResponse,
  ImageRequest,
  ImagesResponse,
  ModerationRequest,
  ModerationResponse,
  OpenAIUsage,
  RerankRequest,
  RerankResponse,
  SpeechChunk,
  SpeechRequest,
} from '../../types';
import type { Upload } from '../../../contract';
import { lengthOf } from '../../audio';
import type { TranscriptionResponse } from '../../operations/transcriptions';
import { UpstreamError } from '../../types';
import { openaiUsage, textOf } from '../shared';
import { mockAudio, mockFormat } from './audio';
import { defineProvider, type CallContext } from '../types';

const CREATED = 1_735_689_600;
const ECHO_CHARS = 200;
/** A valid 1×1 PNG (one translucent blue pixel): what every mock image is. */
export const MOCK_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mPwrzn5HwAFRgKU6ZW+jgAAAABJRU5ErkJggg==';

const wait = async (ctx: CallContext, signal: AbortSignal) => {
  if (ctx.config.latency_ms > 0) await sleep(ctx.config.latency_ms, undefined, { signal });
  signal.throwIfAborted();
};

export const mock = defineProvider({
  type: 'mock',
  operations: {
    chat: {
      local: {
        async send(body, ctx, signal): Promise<ChatResponse> {
          await wait(ctx, signal);
          const a = chatAnswer(body, ctx.maxOutputTokens);
          return {
            id: `chatcmpl-${digest(body).slice(0, 24)}`,
            object: 'chat.completion',
            created: CREATED,
            model: ctx.model,
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content: a.text,
                  refusal: null,
                  ...(a.toolCall ? { tool_calls: [a.toolCall] } : {}),
                },
                logprobs: null,
                finish_reason: a.finish,
              },
            ],
            usage: a.usage,
          };
        },
        async *stream(body, ctx, signal): AsyncGenerator<ChatChunk> {
          const a = chatAnswer(body, ctx.maxOutputTokens);
          const base = {
            id: `chatcmpl-${digest(body).slice(0, 24)}`,
            object: 'chat.completion.chunk' as const,
            created: CREATED,
            model: ctx.model,
          };
          await wait(ctx, signal);
          yield {
            ...base,
            choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
          };
          if (a.toolCall) {
            const { id, type, function: fn } = a.toolCall;
            yield {
              ...base,
              choices: [
                {
                  index: 0,
                  delta: { tool_calls: [{ index: 0, id, type, function: { name: fn.name, arguments: '' } }] },
                  finish_reason: null,
                },
              ],
            };
            yield {
              ...base,
              choices: [
                {
                  index: 0,
                  delta: { tool_calls: [{ index: 0, function: { arguments: fn.arguments } }] },
                  finish_reason: null,
                },
              ],
            };
          }
          for (const piece of pieces(a.text ?? '')) {
            await wait(ctx, signal);
            yield { ...base, choices: [{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }] };
          }
          yield { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: a.finish }] };
          yield { ...base, choices: [], usage: a.usage };
        },
      },
    },
    completions: {
      local: {
        async send(body, ctx, signal): Promise<CompletionResponse> {
          await wait(ctx, signal);
          const a = completionAnswer(body, ctx.maxOutputTokens);
          return {
            id: `cmpl-${digest(body).slice(0, 24)}`,
            object: 'text_completion',
            created: CREATED,
            model: ctx.model,
            choices: [{ index: 0, text: a.text, logprobs: null, finish_reason: a.finish }],
            usage: a.usage,
          };
        },
        async *stream(body, ctx, signal): AsyncGenerator<CompletionResponse> {
          const a = completionAnswer(body, ctx.maxOutputTokens);
          const base = {
            id: `cmpl-${digest(body).slice(0, 24)}`,
            object: 'text_completion' as const,
            created: CREATED,
            model: ctx.model,
          };
          const parts = pieces(a.text);
          for (const [i, piece] of parts.entries()) {
            await wait(ctx, signal);
            yield {
              ...base,
              choices: [
                {
                  index: 0,
                  text: piece,
                  logprobs: null,
                  finish_reason: i === parts.length - 1 ? a.finish : (null as never),
                },
              ],
            };
          }
          yield { ...base, choices: [], usage: a.usage };
        },
      },
    },
    embeddings: {
      local: {
        async send(body: EmbeddingRequest, ctx, signal): Promise<EmbeddingResponse> {
          await wait(ctx, signal);
          const inputs = ([] as unknown[]).concat(body.input as unknown[]);
          const texts =
            typeof body.input === 'string' || (inputs.length && typeof inputs[0] === 'number') ? [body.input] : inputs;
          const dims = body.dimensions ?? 8;
          const data = texts.map((t, index) => ({
            object: 'embedding' as const,
            index,
            embedding: vector(JSON.stringify(t).slice(0, 1000), dims),
          }));
          const tokens = texts.reduce<number>(
            (n, t) => n + (typeof t === 'string' ? estimate(t) : ([] as unknown[]).concat(t).length),
            0,
          );
          return { object: 'list', data, model: ctx.model, usage: { prompt_tokens: tokens, total_tokens: tokens } };
        },
      },
    },
    // Like DALL·E: `n` images and no usage (the gateway counts them, and prices them by the size and quality asked).
    images: {
      local: {
        async send(body: ImageRequest, ctx, signal): Promise<ImagesResponse> {
          await wait(ctx, signal);
          const image = { b64_json: MOCK_PNG, revised_prompt: body.prompt.slice(0, ECHO_CHARS) };
          return { created: CREATED, data: Array.from({ length: body.n ?? 1 }, () => image) };
        },
      },
    },
    // Image edits: as generations, an image per `n`.
    imageEdits: {
      local: {
        async send(body, ctx, signal): Promise<ImagesResponse> {
          await wait(ctx, signal);
          const image = { b64_json: MOCK_PNG, revised_prompt: String(body.prompt).slice(0, ECHO_CHARS) };
          return { created: CREATED, data: Array.from({ length: Number(body.n ?? 1) }, () => image) };
        },
      },
    },
    speech: { local: { stream: speak } },
    // Like whisper-1: a transcript that says how long the audio is, and that length as the usage.
    transcriptions: { local: { send: (body, ctx, signal) => transcribe(body, ctx, signal) } },
    translations: { local: { send: (body, ctx, signal) => transcribe(body, ctx, signal) } },
    moderations: {
      local: {
        async send(body, ctx, signal): Promise<ModerationResponse> {
          await wait(ctx, signal);
          return { id: `modr-${digest(body).slice(0, 24)}`, model: ctx.model, results: moderationResults(body.input) };
        },
      },
    },
    rerank: {
      local: {
        async send(body, ctx, signal): Promise<RerankResponse> {
          await wait(ctx, signal);
          return rerankAnswer(body, ctx.model);
        },
      },
    },
  },
});

/** A transcript of the file, as whisper-1 answers json and verbose_json (one segment): its length as it measured it. */
async function transcribe(
  body: { file: Upload; response_format?: string },
  ctx: CallContext,
  signal: AbortSignal,
): Promise<TranscriptionResponse> {
  await wait(ctx, signal);
  const seconds = lengthOf(body.file).measured;
  const text = `A mock transcript of ${seconds} seconds of ${body.file.filename}.`;
  const usage = { type: 'duration' as const, seconds };
  if (body.response_format !== 'verbose_json') return { text, usage };
  const segments = [{ id: 0, start: 0, end: seconds, text: ` ${text}` }];
  return { task: 'transcribe', language: 'english', duration: seconds, text, segments, usage };
}

/** Audio bytes in each chunk of a speech stream (a stream of several chunks, as an upstream's). */
const SPEECH_CHUNK = 4_096;

/**
 * Speech: a tone (or MP3 silence) of about 60 ms a character, at most 3 s, streamed in chunks — as bytes, or as
 * OpenAI's events with the usage (text tokens by the estimate, audio at 20 tokens a second) at the end.
 */
async function* speak(body: SpeechRequest, ctx: CallContext, signal: AbortSignal): AsyncGenerator<SpeechChunk> {
  const format = body.response_format ?? 'mp3';
  if (!mockFormat(format))
    throw new UpstreamError('invalid', `mock speech in ${format}`, 400, 'The mock provider speaks mp3, wav and pcm');
  const ms = Math.min(3_000, 300 + 60 * body.input.length);
  const audio = mockAudio(format, ms);
  const events = body.stream_format === 'sse';
  for (let at = 0; at < audio.length; at += SPEECH_CHUNK) {
    await wait(ctx, signal);
    const piece = audio.subarray(at, at + SPEECH_CHUNK);
    yield events ? { type: 'speech.audio.delta', audio: piece.toString('base64') } : piece;
  }
  if (!events) return;
  const [input, output] = [estimate(`${body.instructions ?? ''}${body.input}`), Math.ceil(ms / 50)];
  yield {
    type: 'speech.audio.done',
    usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
  };
}

/** OpenAI's moderation categories; those it also scores images for are marked. */
const CATEGORIES: [string, boolean][] = [
  ['harassment', false],
  ['harassment/threatening', false],
  ['hate', false],
  ['hate/threatening', false],
  ['illicit', false],
  ['illicit/violent', false],
  ['self-harm', true],
  ['self-harm/intent', true],
  ['self-harm/instructions', true],
  ['sexual', true],
  ['sexual/minors', false],
  ['violence', true],
  ['violence/graphic', true],
];

/** Violent words flag `violence`, so that a demo can show a flagged result; nothing else is ever flagged. */
const VIOLENT = /\b(kill|murder|attack)\b/i;

/** One result per string, or one for a multimodal input (as OpenAI answers). */
function moderationResults(input: ModerationRequest['input']): ModerationResponse['results'] {
  const inputs = typeof input === 'string' ? [input] : input.every((x) => typeof x === 'string') ? input : [input];
  return inputs.map((x) => {
    const text =
      typeof x === 'string' ? x : x.map((p) => (typeof p === 'object' && p.type === 'text' ? p.text : '')).join(' ');
    const image = typeof x !== 'string' && x.some((p) => typeof p === 'object' && p.type === 'image_url');
    const flagged = VIOLENT.test(text);
    const score = (name: string) =>
      flagged && name === 'violence' ? 0.97 : Number((vector(`${name}:${text}`, 1)[0] ** 2 / 100).toFixed(6));
    return {
      flagged,
      categories: Object.fromEntries(CATEGORIES.map(([c]) => [c, flagged && c === 'violence'])),
      category_scores: Object.fromEntries(CATEGORIES.map(([c]) => [c, score(c)])),
      category_applied_input_types: Object.fromEntries(
        CATEGORIES.map(([c, images]) => [c, [...(text ? ['text'] : []), ...(image && images ? ['image'] : [])]]),
      ),
    };
  });
}

/** Documents ranked by the share of the query's words they contain (ties: in their order); usage at 4 bytes a token. */
function rerankAnswer(body: RerankRequest, model: string): RerankResponse {
  const words = (s: string) => new Set(s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  const asked = words(body.query);
  const texts = body.documents.map((d) => (typeof d === 'string' ? d : d.text));
  const ranked = texts
    .map((text, index) => {
      const found = [...words(text)].filter((w) => asked.has(w)).length;
      return { index, relevance_score: asked.size ? Number((found / asked.size).toFixed(6)) : 0, text };
    })
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
    .slice(0, body.top_n ?? texts.length);
  // the query read with every document, as vLLM counts (estimated once: a long query must not stall the process)
  const tokens = estimate(body.query) * texts.length + texts.reduce((n, t) => n + estimate(t), 0);
  return {
    id: `rerank-${digest(body).slice(0, 24)}`,
    model,
    results: ranked.map(({ index, relevance_score, text }) => ({
      index,
      relevance_score,
      ...(body.return_documents ? { document: { text } } : {}),
    })),
    usage: { prompt_tokens: tokens, total_tokens: tokens, search_units: Math.ceil(texts.length / 100) },
  };
}

/** About four bytes a token, as for English text. */
const estimate = (s: string) => Math.ceil(Buffer.byteLength(s) / 4);

function digest(v: unknown): string {
  return crypto.createHash('sha256').update(JSON.stringify(v)).digest('hex');
}

/** The answer's words, cut to `max` tokens (by the same estimate). */
function limit(words: string, max: number): { text: string; cut: boolean } {
  let out = '';
  for (const p of pieces(words)) {
    if (estimate(out + p) > max) return { text: out, cut: true };
    out += p;
  }
  return { text: out, cut: false };
}

const usage = (prompt: number, completion: number): OpenAIUsage => openaiUsage({ prompt, completion });

function chatAnswer(body: ChatRequest, max: number) {
  const messages = body.messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const prompt = messages.reduce((n, m) => n + 4 + estimate(textOf(m.content, ' ')), 3);
  const said = textOf(last?.content, ' ').slice(0, ECHO_CHARS);
  const choice = body.tool_choice;
  const forced =
    choice && typeof choice === 'object' && 'function' in choice
      ? (choice as { function: { name: string } }).function.name
      : choice === 'required'
        ? (body.tools?.[0] as { function?: { name: string } } | undefined)?.function?.name
        : undefined;
  if (forced) {
    const args = JSON.stringify({ input: said.slice(0, 100) });
    const toolCall = {
      id: `call_${digest([body.messages, forced]).slice(0, 24)}`,
      type: 'function' as const,
      function: { name: forced, arguments: args },
    };
    return { text: null, toolCall, finish: 'tool_calls' as const, usage: usage(prompt, estimate(forced + args)) };
  }
  const { text: out, cut } = limit(`This is a mock answer. You said: ${said || '(nothing)'}`, max);
  return {
    text: out,
    toolCall: undefined,
    finish: cut ? ('length' as const) : ('stop' as const),
    usage: usage(prompt, estimate(out)),
  };
}

function completionAnswer(body: CompletionRequest, max: number) {
  const prompt = Array.isArray(body.prompt)
    ? body.prompt.map((p) => (typeof p === 'string' ? p : '')).join('\n')
    : String(body.prompt ?? '');
  const { text: out, cut } = limit(` (mock completion of: ${prompt.slice(0, ECHO_CHARS)})`, max);
  return {
    text: out,
    finish: cut ? ('length' as const) : ('stop' as const),
    usage: usage(estimate(prompt), estimate(out)),
  };
}

/** Splits text into word-sized pieces, keeping the spaces, so that joining them gives the text back. */
function pieces(s: string): string[] {
  return s.match(/\s*\S+/g) ?? (s ? [s] : []);
}

function vector(seed: string, dims: number): number[] {
  const out: number[] = [];
  for (let i = 0; out.length < dims; i++) {
    const h = crypto.createHash('sha256').update(`${seed}:${i}`).digest();
    for (let j = 0; j + 4 <= h.length && out.length < dims; j += 4)
      out.push(Number(((h.readUInt32LE(j) / 0xffffffff) * 2 - 1).toFixed(6)));
  }
  const norm = Math.sqrt(out.reduce((s, x) => s + x * x, 0)) || 1;
  return out.map((x) => x / norm);
}
