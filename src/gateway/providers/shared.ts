/** Helpers the translating providers share: reading values, data URLs, refusals, and OpenAI chunk and usage shapes. */
import { UpstreamError, type ChatChunk, type ChatResponse, type OpenAIUsage } from '../types';

/** A non-empty string, or undefined. */
export function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}

export const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * A copy of `o`'s own enumerable fields but those in `except`, to add fields to. Not `{ ...o, k: v }`: on Node 20
 * (V8 11.3) a field added to an object made by spread, in the literal or assigned after it, costs about 1 µs, 30 to 50
 * times its cost on Node 22; one added to an object built field by field costs what it costs anywhere. A `__proto__`
 * field (JSON.parse makes it an own field) is copied as a field, as spread copies it, not as the prototype.
 */
export function fieldsOf(o: object, except: readonly string[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o)) {
    if (except.includes(k)) continue;
    const v = (o as Record<string, unknown>)[k];
    if (k === '__proto__')
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}

/** The caller's fault, found before anything was sent: refused as the upstream itself would refuse it (not retried). */
export function badRequest(provider: string, message: string): UpstreamError {
  return new UpstreamError('invalid', `the ${provider} provider cannot send this request: ${message}`, 400, message);
}

/** `data:image/png;base64,AAAA` → its media type and base64 data (a data URL that is not base64 is encoded); null if not a data URL. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const m = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/s.exec(url);
  if (!m) return null;
  const base64 = m[2].split(';').includes('base64');
  let data = m[3];
  if (!base64) {
    try {
      data = Buffer.from(decodeURIComponent(data), 'utf8').toString('base64');
    } catch {
      return null;
    }
  }
  return { mediaType: (m[1] || 'text/plain').toLowerCase(), data };
}

/** The text of a message content: a string, or the text (and refusal) parts of a list joined with `separator`. */
export function textOf(content: unknown, separator = ''): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isObject(p) ? (str(p.text) ?? str(p.refusal) ?? '') : '')).join(separator);
}

/**
 * A system, developer or tool message's content as one text: its text parts joined by blank lines. Any other part
 * is refused (400, before anything is sent), since the translated wires take only text there.
 */
export function textParts(provider: string, content: unknown, where: string): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return (content as { type: string; text?: string }[])
    .map((p, j) => {
      if (p.type !== 'text' || typeof p.text !== 'string')
        throw badRequest(provider, `${where}.content[${j}]: only text parts are allowed here`);
      return p.text;
    })
    .join('\n\n');
}

/**
 * A tool call's arguments as the JSON object the translated wires want. Empty arguments mean none; anything else
 * must be a JSON object, else the request is refused (400) rather than sent with its arguments silently replaced.
 */
export function toolInput(provider: string, args: string, where: string): Record<string, unknown> {
  if (!args || !args.trim()) return {};
  let v: unknown;
  try {
    v = JSON.parse(args);
  } catch {
    throw badRequest(provider, `${where}.function.arguments is not valid JSON`);
  }
  if (!isObject(v)) throw badRequest(provider, `${where}.function.arguments must be a JSON object`);
  return v;
}

export type FinishReason = ChatResponse['choices'][number]['finish_reason'];
type Delta = ChatChunk['choices'][number]['delta'];

/** One chat chunk with a single choice. */
export function chatChunk(
  base: { id: string; created: number; model: string },
  index: number,
  delta: Delta,
  finish: FinishReason | null = null,
): ChatChunk {
  return {
    id: base.id,
    object: 'chat.completion.chunk',
    created: base.created,
    model: base.model,
    choices: [{ index, delta, logprobs: null, finish_reason: finish }],
  };
}

/** The usage chunk at the end of a stream (`choices: []`). */
export function usageChunk(base: { id: string; created: number; model: string }, usage: OpenAIUsage): ChatChunk {
  return { id: base.id, object: 'chat.completion.chunk', created: base.created, model: base.model, choices: [], usage };
}

/**
 * Usage in OpenAI's shape from a translated provider's counts. Cache writes, which OpenAI's usage has no field for,
 * travel as `prompt_tokens_details.cache_write_tokens` (a Switchyard extension, priced by billing).
 */
export function openaiUsage(u: {
  prompt: number;
  completion: number;
  cached?: number;
  cacheWrite?: number;
  reasoning?: number;
}): OpenAIUsage {
  const out: OpenAIUsage = {
    prompt_tokens: u.prompt,
    completion_tokens: u.completion,
    total_tokens: u.prompt + u.completion,
  };
  if (u.cached !== undefined || u.cacheWrite !== undefined) {
    out.prompt_tokens_details = {
      cached_tokens: u.cached ?? 0,
      ...(u.cacheWrite ? { cache_write_tokens: u.cacheWrite } : {}),
    } as OpenAIUsage['prompt_tokens_details'];
  }
  if (u.reasoning !== undefined) out.completion_tokens_details = { reasoning_tokens: u.reasoning };
  return out;
}

export const unixNow = () => Math.floor(Date.now() / 1000);
