/**
 * POST /v1/audio/transcriptions (and translations, which share all of it): an audio file in, its transcript out.
 *
 * What it costs, and how the hold covers it before anything is sent:
 * - per second of audio (whisper-1: the class `audio_seconds`): the length the file itself shows, bounded by its
 *   size (audio.ts), is held; the length the upstream reports is charged (what the file shows when it reports none);
 * - or by tokens (gpt-4o-transcribe: the audio and prompt in, the transcript out): the audio is held at
 *   AUDIO_TOKENS_PER_SECOND of that bound and the transcript at TRANSCRIPT_TOKENS_PER_SECOND; the upstream takes no
 *   output limit, so a request the money does not cover is refused rather than shortened.
 * The upstream is always asked for JSON, which reports the usage: `text` is asked as `json` and `srt`/`vtt` as
 * `verbose_json` (their timed segments), and the gateway writes the text the client asked for from it.
 */
import type { Upload, Wire } from '../../contract';
import type { ModelConfig } from '../../config';
import { errors } from '../../errors';
import { isCount, usage, type Usage } from '../../usage';
import { lengthOf, measureAudio } from '../audio';
import { REQUEST_OVERHEAD } from '../bound';
import { isUpload } from '../providers/form';
import { standardTier } from './policy';
import type { Operation, Output, Reader } from './types';

/**
 * Audio tokens a second of audio may cost: OpenAI's transcribe models read about 10 a second (gpt-4o-transcribe's
 * $6 per million audio tokens is its advertised $0.006 a minute); 50 leaves room for any upstream that counts finer.
 */
export const AUDIO_TOKENS_PER_SECOND = 50;
/** Transcript tokens a second of audio may produce: the fastest speech is about 4 words a second (6 tokens). */
export const TRANSCRIPT_TOKENS_PER_SECOND = 30;
const TRANSCRIPT_OVERHEAD = 100;

type Format = 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt';
export type TranscriptionRequest = Wire['transcriptions']['req'];
export type TranscriptionResponse = Wire['transcriptions']['res'];
type Segment = { start?: number; end?: number; text?: string };

/** What each format the client may ask for is asked of the upstream as (both report the usage). */
const ASKED: Record<Format, 'json' | 'verbose_json'> = {
  json: 'json',
  text: 'json',
  srt: 'verbose_json',
  vtt: 'verbose_json',
  verbose_json: 'verbose_json',
};

/** The format each body sent upstream was asked for by its client, where the gateway writes it. */
const written = new WeakMap<object, 'text' | 'srt' | 'vtt'>();

const fileOf = (body: TranscriptionRequest): Upload => body.file;

/** Seconds the upstream says it transcribed: the usage's, or the verbose answer's duration. */
function reportedSeconds(res: TranscriptionResponse): number | null {
  const u = (res as { usage?: { type?: unknown; seconds?: unknown } }).usage;
  const seconds = u?.type === 'duration' ? u.seconds : (res as { duration?: unknown }).duration;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? Math.ceil(seconds) : null;
}

const reader: Reader<TranscriptionRequest, TranscriptionResponse, never> = {
  usage(res): Usage | null {
    const u = (res as { usage?: { type?: unknown; input_tokens?: unknown; output_tokens?: unknown } }).usage;
    if (u?.type !== 'tokens' || !isCount(u.input_tokens) || !isCount(u.output_tokens)) return null;
    return usage(u.input_tokens, u.output_tokens);
  },
  chunkUsage: (_chunk, previous) => previous,
  prompt: (body) => ({ kind: 'text', text: typeof body.prompt === 'string' ? body.prompt : '' }),
  answerText: (res) => (typeof res.text === 'string' ? res.text : ''),
  chunkText: () => '',
  // Charged what the upstream reports, never beyond the bound that was held; what the file shows when it says nothing.
  units(res, body) {
    const length = lengthOf(fileOf(body));
    return { audioSeconds: Math.min(reportedSeconds(res) ?? length.measured, length.bound) };
  },
};

function features(body: TranscriptionRequest, model: ModelConfig): TranscriptionRequest {
  // The contract's validator leaves files out of `required` (openapi-backend removes binary fields from it).
  if (!isUpload(body.file)) throw errors.invalidRequest('file is required: the audio, as a file of the form', 'file');
  if (body.stream)
    throw errors.invalidRequest('Transcripts are not streamed through this gateway: leave out stream', 'stream');
  const format = (body.response_format ?? 'json') as Format;
  // Unknown fields are passed on: a priority tier among them would raise the upstream's price.
  const sent = {
    ...standardTier(body as TranscriptionRequest & { service_tier?: unknown }, model),
    response_format: ASKED[format] ?? format,
  };
  if (format === 'text' || format === 'srt' || format === 'vtt') written.set(sent, format);
  return sent;
}

/** A time as SubRip (`00:01:02,345`) or WebVTT (`00:01:02.345`) write it. */
function timestamp(seconds: number, sep: ',' | '.'): string {
  const ms = Math.round(Math.max(0, seconds) * 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${sep}${pad(ms % 1000, 3)}`;
}

/** The transcript as the client asked for it, from the upstream's JSON. */
export function writeTranscript(res: TranscriptionResponse, format: 'text' | 'srt' | 'vtt'): string {
  if (format === 'text') return `${res.text}\n`;
  const segments = ((res as { segments?: Segment[] }).segments ?? []).filter((s) => typeof s.text === 'string');
  const sep = format === 'srt' ? ',' : '.';
  const cues = segments.map(
    (s, i) =>
      `${format === 'srt' ? `${i + 1}\n` : ''}${timestamp(s.start ?? 0, sep)} --> ${timestamp(s.end ?? 0, sep)}\n${s.text!.trim()}\n`,
  );
  return `${format === 'vtt' ? 'WEBVTT\n\n' : ''}${cues.join('\n')}`;
}

export const transcriptions: Operation<TranscriptionRequest, TranscriptionResponse, never> = {
  name: 'transcriptions',
  path: '/v1/audio/transcriptions',
  upstream: 'transcriptions',
  reader,
  streams: () => false,
  includeUsage: () => false,
  measure: async (body) => {
    await measureAudio(fileOf(body));
  },
  output(body, _model: ModelConfig): Output {
    const seconds = lengthOf(fileOf(body)).bound;
    const perChoice = TRANSCRIPT_OVERHEAD + TRANSCRIPT_TOKENS_PER_SECOND * seconds;
    return { perChoice, choices: 1, others: { audio_seconds: seconds }, lowerable: false, fixed: true };
  },
  promptBound: (body, profile) =>
    REQUEST_OVERHEAD + profile.textBytes + AUDIO_TOKENS_PER_SECOND * lengthOf(fileOf(body)).bound,
  features,
  answerType: (body) => (written.has(body) ? 'text/plain; charset=utf-8' : null),
  present: (res, _p, body) => {
    const format = written.get(body);
    return (format ? writeTranscript(res, format) : res) as TranscriptionResponse;
  },
  presentChunk: () => null,
  tail: () => [],
  framing: { frame: () => '', done: '', error: () => '' },
};
