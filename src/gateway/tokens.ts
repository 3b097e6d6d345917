/**
 * Token counts for when an upstream reports no usage (or a stream is cut): the o200k_base tokenizer
 * (gpt-tokenizer) with OpenAI's chat framing (3 tokens per message, 3 to prime the reply). For models of other
 * families this is an estimate; the usage's `counted` says which way a count was obtained.
 */
import { countTokens } from 'gpt-tokenizer'; // the default encoding is o200k_base
import type { ChatRequest, CompletionRequest, EmbeddingRequest } from './types';

/** An image part, which we cannot see: OpenAI's base cost of a low-detail image (a typical count)... */
const IMAGE_TOKENS = 85;
/** ...and, for holding money, the most an image costs at the providers we speak to (Anthropic's ~1.15 megapixels). */
const IMAGE_TOKENS_WORST = 1_600;
/** Audio and files (PDFs) we cannot count either: for holds, a token per three bytes of their base64-decoded data. */
const dataTokens = (data: unknown) => (typeof data === 'string' ? Math.ceil(data.length / 4) : 0);

export function countText(text: string): number {
  return text ? countTokens(text) : 0;
}

/**
 * Tokens of a message's content. `worstCase` (for holds) counts what we cannot see — images, audio, files — at the
 * most it may cost, so that a request whose prompt is mostly attachments cannot be held at almost nothing.
 */
function contentTokens(content: unknown, worstCase: boolean): number {
  if (typeof content === 'string') return countText(content);
  if (!Array.isArray(content)) return 0;
  return content.reduce<number>((n, part) => {
    if (!part || typeof part !== 'object') return n;
    const p = part as { type?: string; text?: string; refusal?: string; image_url?: { detail?: string }; input_audio?: { data?: unknown }; file?: { file_data?: unknown } };
    if (typeof p.text === 'string') return n + countText(p.text);
    if (typeof p.refusal === 'string') return n + countText(p.refusal);
    if (p.type === 'image_url') return n + (worstCase && p.image_url?.detail !== 'low' ? IMAGE_TOKENS_WORST : IMAGE_TOKENS);
    if (!worstCase) return n;
    if (p.type === 'input_audio') return n + dataTokens(p.input_audio?.data);
    if (p.type === 'file') return n + dataTokens(p.file?.file_data);
    return n;
  }, 0);
}

/** Prompt tokens of a chat request; `worstCase` for holding money (see contentTokens). */
export function countChatPrompt(body: Pick<ChatRequest, 'messages' | 'tools'>, worstCase = false): number {
  let n = 3;
  for (const m of body.messages ?? []) {
    n += 3 + countText(m.role) + contentTokens(m.content, worstCase);
    if ('name' in m && m.name) n += 1 + countText(m.name);
    if ('tool_calls' in m && m.tool_calls) n += countText(JSON.stringify(m.tool_calls));
  }
  if (body.tools?.length) n += countText(JSON.stringify(body.tools));
  return n;
}

export function countCompletionPrompt(body: Pick<CompletionRequest, 'prompt'>): number {
  return countInput(body.prompt);
}

export function countEmbeddingInput(body: Pick<EmbeddingRequest, 'input'>): number {
  return countInput(body.input);
}

/** A string, a list of strings, a list of token ids, or a list of lists of token ids. */
function countInput(input: unknown): number {
  if (typeof input === 'string') return countText(input);
  if (typeof input === 'number') return 1;
  if (Array.isArray(input)) return input.reduce<number>((n, x) => n + countInput(x), 0);
  return 0;
}
