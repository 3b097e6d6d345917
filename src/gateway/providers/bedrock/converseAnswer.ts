/**
 * Bedrock's Converse answers → OpenAI chat, as pure functions: the whole answer, and a state machine that turns
 * ConverseStream's events (messageStart … messageStop, then metadata with the usage) into OpenAI chunks.
 */
import { randomUUID } from 'node:crypto';
import { UpstreamError, type ChatChunk, type ChatResponse, type OpenAIUsage } from '../../types';
import { chatChunk, openaiUsage, usageChunk, type FinishReason } from '../shared';
import type { ContentBlock, ConverseResponse, ConverseUsage, StreamEvents } from './wire';

type Delta = ChatChunk['choices'][number]['delta'];

export function finishReason(stopReason: string | undefined): FinishReason {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    default: // end_turn, stop_sequence
      return 'stop';
  }
}

/**
 * Converse's usage as OpenAI's. For Claude, Bedrock counts `inputTokens` apart from cache reads and writes, as
 * Anthropic does: all three are prompt tokens (their prices differ: see billing).
 */
export function toUsage(u: ConverseUsage): OpenAIUsage {
  const read = u.cacheReadInputTokens ?? 0;
  const write = u.cacheWriteInputTokens ?? 0;
  const cacheReported = typeof u.cacheReadInputTokens === 'number' || typeof u.cacheWriteInputTokens === 'number';
  return openaiUsage({
    prompt: (u.inputTokens ?? 0) + read + write,
    completion: u.outputTokens ?? 0,
    ...(cacheReported ? { cached: read, cacheWrite: write } : {}),
  });
}

/** Converse answers carry no id: one of ours, so that chunks of a stream share it. */
export const newChatId = () => `chatcmpl-${randomUUID().replace(/-/g, '')}`;

export function fromConverseResponse(res: ConverseResponse, model: string, created: number): ChatResponse {
  const content = res?.output?.message?.content;
  if (!Array.isArray(content)) throw new UpstreamError('protocol', 'the upstream answer is not a Converse answer');
  let text = '';
  let hasText = false;
  const toolCalls: NonNullable<ChatResponse['choices'][number]['message']['tool_calls']> = [];
  for (const b of content as ContentBlock[]) {
    if ('text' in b) {
      text += b.text;
      hasText = true;
    } else if ('toolUse' in b) {
      const t = b.toolUse;
      toolCalls.push({
        id: t.toolUseId,
        type: 'function',
        function: { name: t.name, arguments: JSON.stringify(t.input ?? {}) },
      });
    }
  }
  return {
    id: newChatId(),
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: hasText ? text : toolCalls.length ? null : '',
          refusal: null,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason(res.stopReason),
      },
    ],
    usage: toUsage(res.usage ?? {}),
  };
}

export type StreamEvent = { [K in keyof StreamEvents]: { type: K } & StreamEvents[K] }[keyof StreamEvents];

/**
 * Feed it each event in order; it returns the chunks to send. After `metadata` (which follows messageStop) it is
 * `done`, and the last chunk it returned carried the usage (`choices: []`).
 */
export class ConverseStreamTranslator {
  done = false;
  private readonly id = newChatId();
  private started = false;
  private finished = false;
  /** Converse content block index → OpenAI tool-call index (0-based over tool blocks only). */
  private readonly tools = new Map<number, { index: number; hasArgs: boolean }>();

  constructor(
    private readonly created: number,
    private readonly model: string,
  ) {}

  push(ev: StreamEvent): ChatChunk[] {
    switch (ev.type) {
      case 'messageStart':
        return this.start();
      case 'contentBlockStart':
        return [...this.start(), ...this.blockStart(ev)];
      case 'contentBlockDelta':
        return [...this.start(), ...this.blockDelta(ev)];
      case 'contentBlockStop': {
        // A tool called without arguments: OpenAI's clients expect a JSON object, not an empty string.
        const tool = this.tools.get(ev.contentBlockIndex ?? 0);
        if (!tool || tool.hasArgs) return [];
        tool.hasArgs = true;
        return [this.chunk({ tool_calls: [{ index: tool.index, function: { arguments: '{}' } }] })];
      }
      case 'messageStop': {
        const out = this.start();
        if (!this.finished) out.push(this.chunk({}, finishReason(ev.stopReason)));
        this.finished = true;
        return out;
      }
      case 'metadata':
        if (!this.finished) throw new UpstreamError('protocol', 'the upstream sent its usage before messageStop');
        this.done = true;
        return [usageChunk(this.base(), toUsage(ev.usage ?? {}))];
      default: // event types newer than this code
        return [];
    }
  }

  private blockStart(ev: StreamEvents['contentBlockStart']): ChatChunk[] {
    const t = ev.start?.toolUse;
    if (!t) return [];
    const index = this.tools.size;
    this.tools.set(ev.contentBlockIndex ?? 0, { index, hasArgs: false });
    return [
      this.chunk({
        tool_calls: [{ index, id: t.toolUseId, type: 'function', function: { name: t.name, arguments: '' } }],
      }),
    ];
  }

  private blockDelta(ev: StreamEvents['contentBlockDelta']): ChatChunk[] {
    const d = ev.delta ?? {};
    if (d.text) return [this.chunk({ content: d.text })];
    // Reasoning goes out as `reasoning_content`, as DeepSeek and vLLM stream it: Converse reports no usage before the
    // end, so a stream cut short is billed from the text it carried, and reasoning is billed output.
    if (d.reasoningContent?.text) return [this.chunk({ reasoning_content: d.reasoningContent.text } as Delta)];
    const tool = d.toolUse?.input ? this.tools.get(ev.contentBlockIndex ?? 0) : undefined;
    if (!tool) return [];
    tool.hasArgs = true;
    return [this.chunk({ tool_calls: [{ index: tool.index, function: { arguments: d.toolUse!.input } }] })];
  }

  /** The role chunk, first. */
  private start(): ChatChunk[] {
    if (this.started) return [];
    this.started = true;
    return [this.chunk({ role: 'assistant', content: '' })];
  }

  private chunk(delta: Delta, finish: FinishReason | null = null): ChatChunk {
    return { ...chatChunk(this.base(), 0, delta, finish), usage: null };
  }

  private base() {
    return { id: this.id, created: this.created, model: this.model };
  }
}
