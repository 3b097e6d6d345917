/**
 * Token counts for when an upstream reports no usage (or a stream is cut): the o200k_base tokenizer (gpt-tokenizer)
 * with OpenAI's chat framing (3 tokens per message, 3 to prime the reply). For models of other families this is an
 * estimate; the usage's `counted` says which way a count was obtained. Runs in a worker thread (see index.ts).
 *
 * gpt-tokenizer's BPE is quadratic in the length of one pre-token (a long run without spaces: 100,000 × "a" took
 * 8.4 s), so runs longer than RUN characters are counted in pieces of RUN: linear time, and at most one token more
 * per piece than the exact count.
 */
import { countTokens } from 'gpt-tokenizer'; // the default encoding is o200k_base

export const RUN = 256;
const LONG_RUN = new RegExp(`\\S{${RUN + 1},}`, 'g');

export function countText(text: string): number {
  if (!text) return 0;
  let n = 0;
  let last = 0;
  for (const m of text.matchAll(LONG_RUN)) {
    n += countTokens(text.slice(last, m.index));
    for (let i = 0; i < m[0].length; i += RUN) n += countTokens(m[0].slice(i, i + RUN));
    last = m.index! + m[0].length;
  }
  return n + countTokens(text.slice(last));
}

/** Every string in a value (keys excluded), joined: what a model reads of a JSON structure, roughly. */
export function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) strings(v, out);
  return out;
}

interface ChatLike {
  messages?: { role?: unknown; name?: unknown; content?: unknown; tool_calls?: unknown }[];
  tools?: unknown;
  functions?: unknown;
}

/** Prompt tokens of a chat request. */
export function countChat(body: ChatLike): number {
  let n = 3;
  for (const m of body.messages ?? []) {
    n += 3 + countText(String(m.role ?? '')) + countText(strings(m.content).join(''));
    if (typeof m.name === 'string' && m.name) n += 1 + countText(m.name);
    if (m.tool_calls) n += countText(JSON.stringify(m.tool_calls));
  }
  if (Array.isArray(body.tools) && body.tools.length) n += countText(JSON.stringify(body.tools));
  if (Array.isArray(body.functions) && body.functions.length) n += countText(JSON.stringify(body.functions));
  return n;
}

/** A string, a list of strings, a list of token ids, or a list of lists of token ids (completions, embeddings). */
export function countInput(input: unknown): number {
  if (typeof input === 'string') return countText(input);
  if (typeof input === 'number') return 1;
  if (Array.isArray(input)) return input.reduce<number>((n, x) => n + countInput(x), 0);
  return 0;
}

/**
 * What to count: a chat prompt, a completions or embeddings input, generated text, or a rerank (the query is read
 * once with each document: sent as one string, counted once and multiplied, not copied into the job N times).
 */
export type CountJob =
  | { kind: 'chat'; body: ChatLike }
  | { kind: 'input'; input: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'rerank'; query: string; documents: string[] };

export function count(job: CountJob): number {
  switch (job.kind) {
    case 'chat':
      return countChat(job.body);
    case 'input':
      return countInput(job.input);
    case 'text':
      return countText(job.text);
    case 'rerank':
      return countText(job.query) * job.documents.length + countInput(job.documents);
  }
}
