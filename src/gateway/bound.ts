/**
 * What a request may cost before it is sent, in linear time and without a tokenizer.
 *
 * `inspect` walks a parsed JSON body once. It refuses what the gateway cannot forward safely — nesting deeper than
 * MAX_DEPTH (serialising it again would throw) and numbers that are not finite (`1e309` parses to Infinity) — and
 * measures the body: the UTF-8 bytes of every key, string and number outside attachments (as JSON writes them,
 * escapes included), and the attachments
 * themselves (images, audio, files, file references) by their `type`, whatever message or field holds them, and by
 * what their data is: an "image" whose data URL says `audio/mpeg` is audio, and video is refused (Gemini reads
 * inline video at 263 tokens a second: ten minutes of a 20 kbit/s video fit in 1.5 MB and cost 158,000 tokens).
 *
 * `promptBound` turns that into prompt tokens no tokenizer can exceed: a byte-level BPE tokenizer (OpenAI's, and
 * SentencePiece with byte fallback) never makes more tokens than the text has UTF-8 bytes, and JSON text has at
 * least as many bytes as the strings it encodes. Keys and punctuation count too, which pays for the per-message
 * framing tokens; a fixed allowance pays for what providers add (Anthropic's tool-use system prompt is ~350
 * tokens); images and files count at the model's stated worst case. It over-holds: English prose is about four
 * bytes a token. Settlement makes the charge exact.
 */
import type { ModelConfig } from '../config';

/** Deepest nesting of arrays and objects a request body may have. */
export const MAX_DEPTH = 64;
/** Tokens providers add to every request (reply priming, chat template). */
export const REQUEST_OVERHEAD = 64;
/** Tokens providers add when tools are declared (Anthropic's tool-use system prompt, per-tool formatting). */
export const TOOLS_OVERHEAD = 1_000;
/**
 * Tokens a provider's own tool adds, defined by its `type` rather than by a schema in the request: Anthropic's
 * computer use costs 735 tokens plus a 499-token system prompt, its text editor 700, bash 245; OpenAI's shell,
 * apply_patch and computer tools carry instructions of their own too.
 */
export const BUILTIN_TOOL_TOKENS = 1_500;
/** Tool types described by the request itself (their schemas are counted as bytes). */
const DESCRIBED_TOOLS = new Set(['function', 'custom', 'namespace']);

export interface BodyProfile {
  /** UTF-8 bytes of keys, strings and numbers, outside the data of attachments. */
  textBytes: number;
  images: number;
  /** Inline audio parts and the bytes of their (base64) data. */
  audio: number;
  audioBytes: number;
  /** Inline files (PDFs...) and files by URL. */
  files: number;
  /** References to files stored at the upstream (`file_id`): they would read the operator's own upstream account. */
  fileRefs: number;
  /** Tools or legacy functions are declared. */
  tools: boolean;
  /** Tools a provider defines itself (by `type`: Anthropic's computer use, bash, text editor; OpenAI's shell...). */
  builtinTools?: number;
  /** Cache breakpoints asking for a longer life than the default (Anthropic's `ttl: "1h"`, billed at 2× input). */
  longCache?: number;
  /**
   * Keys of every object at every depth, as parsed: a body whose bytes hold more had duplicate keys, which JSON.parse
   * resolved (the last wins) and an upstream may not, so it is not forwarded as written (splice.ts).
   */
  keys?: number;
}

export class BodyError extends Error {
  override name = 'BodyError';
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

const empty = (): BodyProfile => ({
  textBytes: 0,
  images: 0,
  audio: 0,
  audioBytes: 0,
  files: 0,
  fileRefs: 0,
  tools: false,
  keys: 0,
});

/**
 * Measures and checks a parsed JSON body (see the module comment). Throws a BodyError for what must be refused.
 * `raw`, when given, is the JSON text the body was parsed from: the escapes JSON writes are then counted from its
 * escape sequences (`escapes`), not by scanning every string for the characters that need one.
 */
export function inspect(body: unknown, raw?: Buffer): BodyProfile {
  const p = empty();
  walk(body, 0, p, '', raw ? plainBytes : utf8Bytes);
  if (raw) p.textBytes += escapes(raw);
  return p;
}

/** How a string is measured: as JSON writes it (`utf8Bytes`) or as UTF-8 only, its escapes counted apart. */
type Size = (s: string) => number;

function walk(v: unknown, depth: number, p: BodyProfile, at: string, size: Size): void {
  switch (typeof v) {
    case 'string':
      p.textBytes += size(v);
      return;
    case 'number':
      if (!Number.isFinite(v))
        throw new BodyError(`Invalid value for '${at || 'body'}': numbers must be finite`, at || null);
      p.textBytes += 24; // the longest a number prints
      return;
    case 'boolean':
      p.textBytes += 5;
      return;
    case 'object':
      if (v === null) {
        p.textBytes += 4;
        return;
      }
      if (depth >= MAX_DEPTH)
        throw new BodyError(`The request body is nested deeper than ${MAX_DEPTH} levels`, at || null);
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) walk(v[i], depth + 1, p, at, size);
        return;
      }
      object(v as Record<string, unknown>, depth, p, at, size);
  }
}

function object(o: Record<string, unknown>, depth: number, p: BodyProfile, at: string, size: Size): void {
  const skip = attachment(o, p);
  // a cache breakpoint with a life other than the default's, wherever it is (policy.ts takes its ttl out)
  const cc = o.cache_control;
  if (cc && typeof cc === 'object' && 'ttl' in cc && (cc as { ttl?: unknown }).ttl !== '5m')
    p.longCache = (p.longCache ?? 0) + 1;
  for (const k in o) {
    if (!Object.prototype.hasOwnProperty.call(o, k)) continue;
    p.textBytes += size(k);
    p.keys!++;
    if (k === skip) {
      p.keys! += keysIn(o[k]);
      continue;
    }
    if ((k === 'tools' || k === 'functions') && Array.isArray(o[k]) && (o[k] as unknown[]).length) {
      p.tools = true;
      if (depth === 0 && k === 'tools') p.builtinTools = (o[k] as unknown[]).filter(builtin).length;
    }
    walk(o[k], depth + 1, p, depth === 0 ? k : at, size);
  }
}

/** The keys of the objects in an attachment's data (not measured, but counted: see BodyProfile.keys). */
function keysIn(v: unknown): number {
  if (!v || typeof v !== 'object') return 0;
  let n = 0;
  if (Array.isArray(v)) for (const x of v) n += keysIn(x);
  else for (const k of Object.keys(v)) n += 1 + keysIn((v as Record<string, unknown>)[k]);
  return n;
}

const builtin = (t: unknown) =>
  !!t &&
  typeof t === 'object' &&
  typeof (t as { type?: unknown }).type === 'string' &&
  !DESCRIBED_TOOLS.has((t as { type: string }).type);

/** What an attachment's data is, from its media type (a data URL's, or the one declared). */
type Media = 'image' | 'audio' | 'video' | 'file';

function mediaOf(mediaType: string | undefined, otherwise: Media): Media {
  if (!mediaType) return otherwise;
  const t = mediaType.trim().toLowerCase();
  if (t.startsWith('image/')) return 'image';
  if (t.startsWith('audio/')) return 'audio';
  if (t.startsWith('video/')) return 'video';
  return 'file';
}

/** The media type of a data URL (read from its first bytes only), or undefined for anything else. */
function dataUrlType(url: unknown): string | undefined {
  if (typeof url !== 'string' || !url.startsWith('data:')) return undefined;
  return /^[^;,]*/.exec(url.slice(5, 261))![0] || 'text/plain';
}

const AUDIO_NAMES = /\.(wav|mp3|mpga|aiff?|aac|ogg|oga|opus|flac|m4a|weba)$/i;
const VIDEO_NAMES = /\.(mp4|m4v|mov|avi|mkv|webm|mpe?g|wmv|flv|3gpp?)$/i;

/** What a file name or URL says its data is (a provider may go by the name), or undefined. */
function mediaOfName(name: unknown): Media | undefined {
  if (typeof name !== 'string') return undefined;
  const path = name.slice(0, 2048).split(/[?#]/)[0];
  return AUDIO_NAMES.test(path) ? 'audio' : VIDEO_NAMES.test(path) ? 'video' : undefined;
}

/** Counts an attachment as what it is; video is refused (a second of it costs Gemini 263 tokens, and nothing bounds its length). */
function count(p: BodyProfile, media: Media, bytes: number): void {
  switch (media) {
    case 'image':
      p.images++;
      return;
    case 'audio':
      p.audio++;
      p.audioBytes += bytes;
      return;
    case 'video':
      throw new BodyError('Video input is not accepted through this gateway', null);
    case 'file':
      p.files++;
  }
}

/**
 * An attachment part, recognised by its `type` (OpenAI chat and Responses, Anthropic Messages): counts it and
 * returns the key whose value holds its data (not counted as text), or undefined.
 */
function attachment(o: Record<string, unknown>, p: BodyProfile): string | undefined {
  const type = o.type;
  if (typeof type !== 'string') return undefined;
  const inner = (k: string) => (o[k] && typeof o[k] === 'object' ? (o[k] as Record<string, unknown>) : {});
  switch (type) {
    case 'image_url': {
      // chat: {image_url: {url, detail}}
      const url = typeof o.image_url === 'string' ? o.image_url : inner('image_url').url;
      count(p, mediaOf(dataUrlType(url), 'image'), dataBytes(url));
      return 'image_url';
    }
    case 'input_image': // responses: {image_url} or {file_id}
      if (typeof o.file_id === 'string') p.fileRefs++;
      else count(p, mediaOf(dataUrlType(o.image_url), 'image'), dataBytes(o.image_url));
      return 'image_url';
    case 'input_audio': // chat: {input_audio: {data, format}}
      count(p, 'audio', dataBytes(inner('input_audio').data));
      return 'input_audio';
    case 'file': {
      // chat: {file: {file_data | file_id, filename}}
      const f = inner('file');
      if (typeof f.file_id === 'string') p.fileRefs++;
      else count(p, mediaOf(dataUrlType(f.file_data), mediaOfName(f.filename) ?? 'file'), dataBytes(f.file_data));
      return 'file';
    }
    case 'input_file': // responses: {file_data | file_id | file_url}
      if (typeof o.file_id === 'string') p.fileRefs++;
      else
        count(
          p,
          mediaOf(dataUrlType(o.file_data), mediaOfName(o.filename) ?? mediaOfName(o.file_url) ?? 'file'),
          dataBytes(o.file_data),
        );
      return 'file_data';
    case 'container_upload': // anthropic: {file_id} of a file in the operator's Files API
      if (typeof o.file_id === 'string') p.fileRefs++;
      return undefined;
    case 'image': // anthropic: {source: {type: base64 | url | file, media_type}}
    case 'document': {
      const source = inner('source');
      if (source.type === 'file') p.fileRefs++;
      else if (type === 'document' && (source.type === 'text' || source.type === 'content'))
        return undefined; // text: counted as text
      else {
        const declared =
          source.type === 'base64' && typeof source.media_type === 'string' ? source.media_type : undefined;
        count(
          p,
          mediaOf(declared, mediaOfName(source.url) ?? (type === 'image' ? 'image' : 'file')),
          dataBytes(source.data),
        );
      }
      return 'source';
    }
    default:
      return undefined;
  }
}

const dataBytes = (v: unknown) => (typeof v === 'string' ? v.length : 0);

/** Characters JSON writes escaped: quotes and backslashes (2 bytes), control characters (up to 6), lone surrogates. */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * A string's size as JSON text: its UTF-8 bytes, escapes included. Providers render tool schemas, tool calls and
 * response formats into the prompt as JSON, where a control character is six bytes (`\u0001`): counted as one,
 * 40,000 of them in a tool's description held a sixth of what Anthropic billed.
 */
const utf8Bytes = (s: string) =>
  ESCAPED.test(s) ? Buffer.byteLength(JSON.stringify(s)) - 2 : Buffer.byteLength(s, 'utf8');

const plainBytes = (s: string) => Buffer.byteLength(s, 'utf8');

/**
 * The bytes JSON's escapes add to the strings parsed from `raw` (valid JSON text), beyond their UTF-8: what
 * `utf8Bytes` adds, found without scanning every string. Each character JSON.stringify escapes (a quote, a backslash,
 * a control character, a lone surrogate) was written in `raw` as an escape sequence too (raw text cannot hold it),
 * and a backslash occurs in JSON text only to begin one. So the sequences are found with indexOf, and each adds what
 * JSON.stringify's writing of its character adds: 1 for `\"`, `\\` and a control character with a short form, 5
 * for another control character (`\u0001`), 3 for a surrogate (as `\udc00`, 6 bytes against the 3 of the U+FFFD
 * Buffer.byteLength counts; a pair's halves are counted so too, an over-count), 0 for anything else (`\/`,
 * `\u00e9`). The sum is at least what the scan finds, and equal to it without escaped surrogate pairs. Measured on
 * an 87 KB Claude Code body: 3 µs against the scan's 217 µs.
 */
export function escapes(raw: Buffer): number {
  let n = 0;
  for (let i = raw.indexOf(BACKSLASH); i !== -1; i = raw.indexOf(BACKSLASH, i + 2)) {
    const c = raw[i + 1];
    if (c === U) {
      const code = parseInt(raw.toString('latin1', i + 2, i + 6), 16);
      n += SHORT.has(code) ? 1 : code < 0x20 ? 5 : code >= 0xd800 && code <= 0xdfff ? 3 : 0;
      i += 4;
    } else if (c !== SLASH) n++;
  }
  return n;
}

const BACKSLASH = 0x5c;
const U = 0x75;
const SLASH = 0x2f;
/** What JSON.stringify writes with a two-byte escape: the quote, the backslash, \b \f \n \r \t. */
const SHORT = new Set([0x22, 0x5c, 0x08, 0x0c, 0x0a, 0x0d, 0x09]);

/**
 * Attachments a model does not take: references to files stored at the upstream (they would read the operator's
 * own upstream account) always, audio unless the model allows it (audio tokens cost more than text tokens).
 */
export function checkAttachments(p: BodyProfile, model: Pick<ModelConfig, 'id' | 'allow'>): void {
  if (p.fileRefs)
    throw new BodyError(
      'Files stored at the provider (file_id) cannot be used through this gateway: send the file inline (file_data)',
      null,
    );
  if (p.audio && !model.allow.includes('audio'))
    throw new BodyError(`Model ${model.id} does not take audio input through this gateway`, null);
}

/** Tokens the prompt of a request with this profile cannot exceed on this model (see the module comment). */
export function promptBound(p: BodyProfile, model: Pick<ModelConfig, 'image_tokens' | 'file_tokens'>): number {
  return (
    REQUEST_OVERHEAD +
    p.textBytes +
    (p.tools ? TOOLS_OVERHEAD : 0) +
    (p.builtinTools ?? 0) * BUILTIN_TOOL_TOKENS +
    p.images * model.image_tokens +
    p.files * model.file_tokens +
    // audio: a token per three bytes of base64 data is far above any provider's rate (Gemini: 32 tokens a second)
    Math.ceil(p.audioBytes / 3)
  );
}

/** About how many tokens the request holds, for tokens-per-minute limits (a token per four bytes, as OpenAI estimates). */
export function tokenEstimate(p: BodyProfile, model: Pick<ModelConfig, 'image_tokens' | 'file_tokens'>): number {
  return (
    Math.ceil(p.textBytes / 4) +
    p.images * model.image_tokens +
    p.files * model.file_tokens +
    Math.ceil(p.audioBytes / 3)
  );
}
