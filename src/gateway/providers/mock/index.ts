/**
 * Provider `mock`: answers locally and deterministically (same request, same answer), for demos, the contract
 * tests and load tests. Token counts come from the real tokenizer so that usage looks like a real upstream's.
 */
import crypto from 'node:crypto';
import { countTokens } from 'gpt-tokenizer';
import type { ProviderConfig } from '../../../config';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  CompletionRequest,
  CompletionResponse,
  EmbeddingRequest,
  EmbeddingResponse,
  Provider,
  UpstreamCall,
  Usage,
} from '../../types';

const CREATED = 1_735_689_600;

export class MockProvider implements Provider {
  constructor(private readonly config: ProviderConfig) {}

  async chat(call: UpstreamCall<ChatRequest>): Promise<ChatResponse> {
    await this.wait(call.signal);
    const a = chatAnswer(call.body);
    return {
      id: `chatcmpl-${digest(call.body).slice(0, 24)}`,
      object: 'chat.completion',
      created: CREATED,
      model: call.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: a.text, refusal: null, ...(a.toolCall ? { tool_calls: [a.toolCall] } : {}) },
          logprobs: null,
          finish_reason: a.finish,
        },
      ],
      usage: a.usage,
    };
  }

  async *chatStream(call: UpstreamCall<ChatRequest>): AsyncGenerator<ChatChunk> {
    const a = chatAnswer(call.body);
    const base = { id: `chatcmpl-${digest(call.body).slice(0, 24)}`, object: 'chat.completion.chunk' as const, created: CREATED, model: call.model };
    await this.wait(call.signal);
    yield { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] };
    if (a.toolCall) {
      const { id, type, function: fn } = a.toolCall;
      yield { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id, type, function: { name: fn.name, arguments: '' } }] }, finish_reason: null }] };
      yield { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: fn.arguments } }] }, finish_reason: null }] };
    }
    for (const piece of pieces(a.text ?? '')) {
      await this.wait(call.signal);
      yield { ...base, choices: [{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }] };
    }
    yield { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: a.finish }] };
    yield { ...base, choices: [], usage: a.usage };
  }

  async completion(call: UpstreamCall<CompletionRequest>): Promise<CompletionResponse> {
    await this.wait(call.signal);
    const a = completionAnswer(call.body);
    return {
      id: `cmpl-${digest(call.body).slice(0, 24)}`,
      object: 'text_completion',
      created: CREATED,
      model: call.model,
      choices: [{ index: 0, text: a.text, logprobs: null, finish_reason: a.finish }],
      usage: a.usage,
    };
  }

  async *completionStream(call: UpstreamCall<CompletionRequest>): AsyncGenerator<CompletionResponse> {
    const a = completionAnswer(call.body);
    const base = { id: `cmpl-${digest(call.body).slice(0, 24)}`, object: 'text_completion' as const, created: CREATED, model: call.model };
    const parts = pieces(a.text);
    for (const [i, piece] of parts.entries()) {
      await this.wait(call.signal);
      yield { ...base, choices: [{ index: 0, text: piece, logprobs: null, finish_reason: i === parts.length - 1 ? a.finish : (null as never) }] };
    }
    yield { ...base, choices: [], usage: a.usage };
  }

  async embeddings(call: UpstreamCall<EmbeddingRequest>): Promise<EmbeddingResponse> {
    await this.wait(call.signal);
    const inputs = ([] as unknown[]).concat(call.body.input as unknown[]);
    const texts = typeof call.body.input === 'string' || (inputs.length && typeof inputs[0] === 'number') ? [call.body.input] : inputs;
    const dims = call.body.dimensions ?? 8;
    const data = texts.map((t, index) => ({ object: 'embedding' as const, index, embedding: vector(JSON.stringify(t), dims) }));
    const tokens = texts.reduce<number>((n, t) => n + (typeof t === 'string' ? countTokens(t) : ([] as unknown[]).concat(t).length), 0);
    return { object: 'list', data, model: call.model, usage: { prompt_tokens: tokens, total_tokens: tokens } };
  }

  async close(): Promise<void> {}

  private async wait(signal: AbortSignal): Promise<void> {
    if (this.config.latency_ms > 0) await sleep(this.config.latency_ms, undefined, { signal });
    signal.throwIfAborted();
  }
}

function digest(v: unknown): string {
  return crypto.createHash('sha256').update(JSON.stringify(v)).digest('hex');
}

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String(p.text) : '')).join(' ');
  return '';
}

function limit(words: string, max: number | null | undefined): { text: string; cut: boolean } {
  if (!max) return { text: words, cut: false };
  const parts = pieces(words);
  let out = '';
  for (const p of parts) {
    if (countTokens(out + p) > max) return { text: out, cut: true };
    out += p;
  }
  return { text: out, cut: false };
}

function usage(prompt: number, completion: number): Usage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function chatAnswer(body: ChatRequest) {
  const messages = body.messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const prompt = messages.reduce((n, m) => n + 4 + countTokens(text(m.content)), 3);
  const choice = body.tool_choice;
  const forced =
    choice && typeof choice === 'object' && 'function' in choice
      ? (choice as { function: { name: string } }).function.name
      : choice === 'required'
        ? (body.tools?.[0] as { function?: { name: string } } | undefined)?.function?.name
        : undefined;
  if (forced) {
    const args = JSON.stringify({ input: text(last?.content).slice(0, 100) });
    const toolCall = { id: `call_${digest([body.messages, forced]).slice(0, 24)}`, type: 'function' as const, function: { name: forced, arguments: args } };
    return { text: null, toolCall, finish: 'tool_calls' as const, usage: usage(prompt, countTokens(forced + args)) };
  }
  const answer = `This is a mock answer. You said: ${text(last?.content) || '(nothing)'}`;
  const { text: out, cut } = limit(answer, body.max_completion_tokens ?? body.max_tokens);
  return { text: out, toolCall: undefined, finish: cut ? ('length' as const) : ('stop' as const), usage: usage(prompt, countTokens(out)) };
}

function completionAnswer(body: CompletionRequest) {
  const prompt = Array.isArray(body.prompt) ? body.prompt.map((p) => (typeof p === 'string' ? p : '')).join('\n') : String(body.prompt ?? '');
  const { text: out, cut } = limit(` (mock completion of: ${prompt.slice(0, 200)})`, body.max_tokens);
  return { text: out, finish: cut ? ('length' as const) : ('stop' as const), usage: usage(countTokens(prompt), countTokens(out)) };
}

/** Splits text into word-sized pieces, keeping the spaces, so that joining them gives the text back. */
function pieces(s: string): string[] {
  return s.match(/\s*\S+/g) ?? (s ? [s] : []);
}

function vector(seed: string, dims: number): number[] {
  const out: number[] = [];
  for (let i = 0; out.length < dims; i++) {
    const h = crypto.createHash('sha256').update(`${seed}:${i}`).digest();
    for (let j = 0; j + 4 <= h.length && out.length < dims; j += 4) out.push(Number((h.readUInt32LE(j) / 0xffffffff * 2 - 1).toFixed(6)));
  }
  const norm = Math.sqrt(out.reduce((s, x) => s + x * x, 0)) || 1;
  return out.map((x) => x / norm);
}
