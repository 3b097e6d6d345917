/**
 * POST /v1/audio/speech: OpenAI's text to speech. The answer is audio, passed to the client as the upstream sends it
 * (a binary answer, never gathered whole), or with `stream_format: sse` OpenAI's events (base64 audio, then usage).
 *
 * What it costs, and how the hold covers it before anything is sent:
 * - per character of `input` (tts-1: `price.characters`, per million): the request says how many, so they are held
 *   and charged exactly, whatever the audio;
 * - or by tokens (gpt-4o-mini-tts: `input` for the text, `output` for the audio). The upstream takes no limit on
 *   the audio, so the hold covers the most an input of that length can produce (OUTPUT_PER_BYTE); and it reports
 *   the tokens only in its events, so a model whose output is priced is always asked for events — their audio goes
 *   to a client that asked for raw audio as bytes — and is charged what the upstream reports.
 */
import type { ModelConfig } from '../../config';
import { errors } from '../../errors';
import { isCount, usage } from '../../usage';
import type { SpeechChunk, SpeechEvent, SpeechRequest } from '../types';
import { OPENAI_SSE } from './openai';
import { standardTier } from './policy';
import type { Operation, Reader } from './types';

/**
 * Audio tokens an input may produce, per UTF-8 byte of it, and for the whole request (silence before and after).
 * OpenAI's example, 44 characters read in 101 audio tokens, is 2.3 a byte; a CJK character (3 bytes) read slowly
 * stays under 3 a byte. 8 leaves room for slow voices and pauses the instructions may ask for; a `speed` below 1
 * stretches it (some upstreams honour it on every model). An operator who sees more sets `extra_output_tokens`.
 */
export const OUTPUT_PER_BYTE = 8;
export const OUTPUT_OVERHEAD = 200;

/** The media type of each `response_format`, as OpenAI sends it. */
const MEDIA_TYPES: Record<NonNullable<SpeechRequest['response_format']>, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** Bodies sent upstream as events although their client asked for the audio's bytes (features, below). */
const wantsBytes = new WeakSet<object>();

/** Whether the model prices the audio it generates (by tokens), at its base or at any tier. */
export function outputPriced(model: Pick<ModelConfig, 'price'>): boolean {
  return (model.price.output ?? 0) > 0 || (model.price.tiers ?? []).some((t) => (t.output ?? 0) > 0);
}

/** Characters as OpenAI counts its limit of 4096 (code points: an emoji is one). */
function characters(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

const isEvent = (c: SpeechChunk): c is SpeechEvent => !(c instanceof Uint8Array);

const reader: Reader<SpeechRequest, never, SpeechChunk> = {
  usage: () => null,
  // `speech.audio.done` carries the whole request's usage: text input tokens, audio output tokens.
  chunkUsage(chunk, previous) {
    if (!isEvent(chunk) || chunk.type !== 'speech.audio.done') return previous;
    const u = chunk.usage as { input_tokens?: unknown; output_tokens?: unknown } | undefined;
    if (!isCount(u?.input_tokens) || !isCount(u?.output_tokens)) return previous;
    return { usage: usage(u.input_tokens, u.output_tokens), final: true };
  },
  prompt: (body) => ({ kind: 'text', text: body.instructions ? `${body.instructions}\n${body.input}` : body.input }),
  // Audio is not text: what went by of it is not counted (see `unreported`).
  answerText: () => '',
  chunkText: () => '',
};

export const speech: Operation<SpeechRequest, never, SpeechChunk> = {
  name: 'speech',
  path: '/v1/audio/speech',
  upstream: 'speech',
  reader,
  streams: () => true,
  includeUsage: () => false,
  output(body, model) {
    if (!outputPriced(model)) return { perChoice: 0, choices: 1, fixed: true };
    const bound = OUTPUT_OVERHEAD + OUTPUT_PER_BYTE * Buffer.byteLength(body.input);
    return { perChoice: Math.ceil(bound / Math.min(1, body.speed ?? 1)), choices: 1, fixed: true };
  },
  features(body, model) {
    if (typeof body.voice !== 'string') {
      throw errors.invalidRequest(
        "Custom voices are kept in the provider's account and cannot be used through this gateway: name a voice",
        'voice',
      );
    }
    const sent = standardTier(body as SpeechRequest & { service_tier?: unknown }, model);
    if (!outputPriced(model) || body.stream_format === 'sse') return sent;
    const asEvents = { ...sent, stream_format: 'sse' as const };
    wantsBytes.add(asEvents);
    return asEvents;
  },
  units: (body) => ({ characters: characters(body.input) }),
  // A stream cut before the usage came (the client left, the upstream broke off): the upstream may go on and bill the
  // whole audio, and no count of the bytes that went by tells how many tokens they were; the bound is charged.
  unreported: (counted, _body, allowance) => ({ ...counted, completion: Math.max(counted.completion, allowance) }),
  binary: (body) =>
    body.stream_format === 'sse' && !wantsBytes.has(body) ? null : MEDIA_TYPES[body.response_format ?? 'mp3'],
  present: (res) => res,
  presentChunk(chunk, { body }) {
    if (!isEvent(chunk) || !wantsBytes.has(body as object)) return chunk;
    return chunk.type === 'speech.audio.delta' ? Buffer.from(chunk.audio, 'base64') : null;
  },
  tail: () => [],
  framing: {
    frame: (chunk) => (chunk instanceof Uint8Array ? chunk : OPENAI_SSE.frame(chunk)),
    done: '',
    error: OPENAI_SSE.error,
  },
};
