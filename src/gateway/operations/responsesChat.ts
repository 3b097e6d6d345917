/**
 * OpenAI's Responses served through chat, for routes whose provider has no Responses of its own: input items become
 * chat messages, the chat answer a `response` object with output items, and chat chunks the typed events of a
 * Responses stream (each with its sequence_number). Chat carries function tools only: other tool types are
 * dropped, as the README says; reasoning items are not replayed (item references never get here: refused in
 * responses.ts's features, which run before any bridge).
 */
import crypto from 'node:crypto';
import type {
  ChatChunk,
  ChatMessage,
  ChatRequest,
  ChatResponse,
  OpenAIUsage,
  ResponseEvent,
  ResponseInputItem,
  ResponseObject,
  ResponseOutputItem,
  ResponsesRequest,
} from '../types';
import type { Usage } from '../../usage';
import type { Bridge, Presented, StreamMapper } from './types';

const id = (prefix: string) => `${prefix}_${crypto.randomBytes(16).toString('hex')}`;

type Part = { type: string; text?: string; image_url?: string; detail?: string; file_data?: string; filename?: string };

function contentParts(content: ResponseInputItem['content']): string | Part[] {
  if (typeof content === 'string' || !content) return content ?? '';
  return (content as Part[]).flatMap((p): Part[] => {
    if (p.type === 'input_text' || p.type === 'output_text') return [{ type: 'text', text: p.text ?? '' }];
    if (p.type === 'refusal') return [{ type: 'text', text: (p as { refusal?: string }).refusal ?? '' }];
    if (p.type === 'input_image' && p.image_url)
      return [
        { type: 'image_url', image_url: { url: p.image_url, ...(p.detail ? { detail: p.detail } : {}) } } as never,
      ];
    if (p.type === 'input_file' && p.file_data)
      return [{ type: 'file', file: { file_data: p.file_data, filename: p.filename ?? 'file' } } as never];
    return [];
  });
}

const textOf = (c: string | Part[]) => (typeof c === 'string' ? c : c.map((p) => p.text ?? '').join(''));

/**
 * Chat has no namespaces: a function in a `namespace` tool (Codex groups its sub-agent tools so) is a chat function
 * named `<namespace>__<name>`, and a call of it comes back as a function_call with its `namespace` and `name`.
 */
const NS = '__';

type Tool = NonNullable<ResponsesRequest['tools']>[number];

const chatFunction = (t: Tool, ns?: string) => ({
  type: 'function' as const,
  function: {
    name: ns ? `${ns}${NS}${t.name ?? ''}` : (t.name ?? ''),
    ...(t.description ? { description: t.description } : {}),
    ...(t.parameters ? { parameters: t.parameters } : {}),
    ...(typeof t.strict === 'boolean' ? { strict: t.strict } : {}),
  },
});

/** Function tools, and the functions of namespace tools; any other type has no chat equivalent and is dropped. */
function chatTools(tools: ResponsesRequest['tools']) {
  return (tools ?? []).flatMap((t) => {
    if (t.type === 'function') return [chatFunction(t)];
    const inner = (t as { tools?: unknown }).tools;
    if (t.type !== 'namespace' || !t.name || !Array.isArray(inner)) return [];
    return (inner as Tool[]).filter((f) => f?.type === 'function').map((f) => chatFunction(f, t.name));
  });
}

/** A chat function's name as a Responses call: its namespace (if it names one of the request's) and name. */
export function callName(name: string, body: ResponsesRequest): { name: string; namespace?: string } {
  const at = name.indexOf(NS);
  if (at <= 0) return { name };
  const ns = name.slice(0, at);
  return (body.tools ?? []).some((t) => t.type === 'namespace' && t.name === ns)
    ? { namespace: ns, name: name.slice(at + NS.length) }
    : { name };
}

/** Input items as chat messages: function calls join the assistant turn before them, their outputs are tool messages. */
export function toChatMessages(items: ResponseInputItem[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const item of items) {
    const type = item.type ?? 'message';
    if (type === 'message' && item.role) {
      const content = contentParts(item.content);
      if (item.role === 'assistant') out.push({ role: 'assistant', content: textOf(content) });
      else if (item.role === 'user') out.push({ role: 'user', content: content as never });
      else out.push({ role: item.role, content: textOf(content) });
    } else if (type === 'function_call') {
      const ns = typeof item.namespace === 'string' && item.namespace ? `${item.namespace}${NS}` : '';
      const call = {
        id: item.call_id ?? '',
        type: 'function' as const,
        function: { name: `${ns}${item.name ?? ''}`, arguments: item.arguments ?? '' },
      };
      const last = out[out.length - 1];
      if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
      else out.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (type === 'function_call_output') {
      const output = typeof item.output === 'string' ? item.output : textOf(contentParts(item.output as never));
      out.push({ role: 'tool', tool_call_id: item.call_id ?? '', content: output });
    }
  }
  return out;
}

export function toChatRequest(body: ResponsesRequest): ChatRequest {
  const items: ResponseInputItem[] =
    typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.input ?? []);
  const messages: ChatMessage[] = [
    ...(body.instructions ? [{ role: 'system' as const, content: body.instructions }] : []),
    ...toChatMessages(items),
  ];
  const tools = chatTools(body.tools);
  const choice = body.tool_choice;
  const format = body.text?.format;
  return {
    model: body.model,
    messages,
    ...(body.max_output_tokens ? { max_completion_tokens: body.max_output_tokens } : {}),
    ...(typeof body.temperature === 'number' ? { temperature: body.temperature } : {}),
    ...(typeof body.top_p === 'number' ? { top_p: body.top_p } : {}),
    ...(body.user ? { user: body.user } : {}),
    ...(body.reasoning?.effort ? { reasoning_effort: body.reasoning.effort as never } : {}),
    ...(tools.length ? { tools } : {}),
    ...(tools.length && choice
      ? {
          tool_choice:
            typeof choice === 'string'
              ? choice
              : choice.type === 'function' && choice.name
                ? { type: 'function', function: { name: choice.name } }
                : 'auto',
        }
      : {}),
    ...(tools.length && typeof body.parallel_tool_calls === 'boolean'
      ? { parallel_tool_calls: body.parallel_tool_calls }
      : {}),
    ...(format?.type === 'json_schema'
      ? {
          response_format: {
            type: 'json_schema',
            json_schema: {
              name: format.name ?? 'output',
              schema: format.schema,
              ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
            },
          },
        }
      : {}),
    ...(format?.type === 'json_object' ? { response_format: { type: 'json_object' } } : {}),
    ...(body.stream ? { stream: true } : {}),
  } as ChatRequest;
}

/** Our usage in the Responses shape. */
export function responseUsage(u: Usage): NonNullable<ResponseObject['usage']> {
  return {
    input_tokens: u.prompt,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.completion,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.prompt + u.completion,
  };
}

function usageOf(u: OpenAIUsage | undefined | null): Usage {
  return {
    prompt: u?.prompt_tokens ?? 0,
    cached: u?.prompt_tokens_details?.cached_tokens ?? 0,
    cacheWrite: 0,
    completion: u?.completion_tokens ?? 0,
    reasoning: u?.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}

/** The fields of a response that echo its request. */
function echo(body: ResponsesRequest): Partial<ResponseObject> {
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    store: body.store !== false,
    temperature: body.temperature ?? 1,
    top_p: body.top_p ?? 1,
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    text: body.text ?? { format: { type: 'text' } },
    reasoning: body.reasoning ?? null,
    metadata: body.metadata ?? {},
  } as Partial<ResponseObject>;
}

function response(
  body: ResponsesRequest,
  model: string,
  output: ResponseOutputItem[],
  status: ResponseObject['status'],
  usage: Usage | null,
): ResponseObject {
  return {
    id: id('resp'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model,
    output,
    ...(usage ? { usage: responseUsage(usage) } : {}),
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    ...echo(body),
  } as ResponseObject;
}

const message = (text: string, status = 'completed'): ResponseOutputItem => ({
  type: 'message',
  id: id('msg'),
  status,
  role: 'assistant',
  content: [{ type: 'output_text', text, annotations: [] }],
});

export function fromChatResponse(res: ChatResponse, body: ResponsesRequest): ResponseObject {
  const choice = res.choices[0];
  const output: ResponseOutputItem[] = [];
  if (choice?.message.content) output.push(message(choice.message.content));
  for (const c of choice?.message.tool_calls ?? []) {
    if ('function' in c)
      output.push({
        type: 'function_call',
        id: id('fc'),
        call_id: c.id,
        ...callName(c.function.name, body),
        arguments: c.function.arguments,
        status: 'completed',
      });
  }
  return response(
    body,
    res.model,
    output,
    choice?.finish_reason === 'length' ? 'incomplete' : 'completed',
    usageOf(res.usage),
  );
}

/** Chat chunks as a Responses stream: created, in_progress, one output item per text run or tool call, completed. */
export class ChatToResponsesStream implements StreamMapper<ChatChunk, ResponseEvent> {
  private seq = 0;
  private started = false;
  private readonly output: ResponseOutputItem[] = [];
  private open: {
    kind: 'text' | 'call';
    index: number;
    item: ResponseOutputItem;
    text: string;
    toolIndex?: number;
  } | null = null;
  private finish: string | null = null;
  private readonly shell: ResponseObject;

  constructor(
    private readonly body: ResponsesRequest,
    model: string,
  ) {
    this.shell = response(body, model, [], 'in_progress', null);
  }

  push(chunk: ChatChunk): ResponseEvent[] {
    const out = this.start();
    const choice = chunk.choices[0];
    if (!choice) return out;
    const d = choice.delta ?? {};
    if (d.content) {
      if (this.open?.kind !== 'text') out.push(...this.close(), ...this.openItem('text', message('', 'in_progress')));
      this.open!.text += d.content;
      out.push(
        this.ev({
          type: 'response.output_text.delta',
          item_id: this.open!.item.id,
          output_index: this.open!.index,
          content_index: 0,
          delta: d.content,
          logprobs: [],
        }),
      );
    }
    for (const t of d.tool_calls ?? []) {
      // A new call: another index, or another id at the same index (some servers repeat the id on every fragment)
      if (
        this.open?.kind !== 'call' ||
        this.open.toolIndex !== t.index ||
        (t.id && t.id !== (this.open.item as { call_id?: string }).call_id)
      ) {
        out.push(
          ...this.close(),
          ...this.openItem(
            'call',
            {
              type: 'function_call',
              id: id('fc'),
              call_id: t.id ?? '',
              ...callName(t.function?.name ?? '', this.body),
              arguments: '',
              status: 'in_progress',
            },
            t.index,
          ),
        );
      }
      if (t.function?.arguments) {
        this.open!.text += t.function.arguments;
        out.push(
          this.ev({
            type: 'response.function_call_arguments.delta',
            item_id: this.open!.item.id,
            output_index: this.open!.index,
            delta: t.function.arguments,
          }),
        );
      }
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  end(p: Presented): ResponseEvent[] {
    const out = [...this.start(), ...this.close()];
    const status = this.finish === 'length' ? 'incomplete' : 'completed';
    const done = {
      ...this.shell,
      status,
      output: this.output,
      usage: responseUsage(p.usage),
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    } as ResponseObject;
    out.push(this.ev({ type: status === 'completed' ? 'response.completed' : 'response.incomplete', response: done }));
    return out;
  }

  private ev(e: Omit<ResponseEvent, 'sequence_number'>): ResponseEvent {
    return { ...e, sequence_number: this.seq++ } as ResponseEvent;
  }

  private start(): ResponseEvent[] {
    if (this.started) return [];
    this.started = true;
    return [
      this.ev({ type: 'response.created', response: this.shell }),
      this.ev({ type: 'response.in_progress', response: this.shell }),
    ];
  }

  private openItem(kind: 'text' | 'call', item: ResponseOutputItem, toolIndex?: number): ResponseEvent[] {
    const index = this.output.length;
    this.output.push(item);
    this.open = { kind, index, item, text: '', toolIndex };
    const out = [
      this.ev({
        type: 'response.output_item.added',
        output_index: index,
        item: { ...item, ...(kind === 'text' ? { content: [] } : {}) },
      }),
    ];
    if (kind === 'text')
      out.push(
        this.ev({
          type: 'response.content_part.added',
          item_id: item.id,
          output_index: index,
          content_index: 0,
          part: { type: 'output_text', text: '', annotations: [] },
        }),
      );
    return out;
  }

  private close(): ResponseEvent[] {
    const o = this.open;
    if (!o) return [];
    this.open = null;
    if (o.kind === 'text') {
      const part = { type: 'output_text', text: o.text, annotations: [] };
      const item = (this.output[o.index] = { ...o.item, status: 'completed', content: [part] });
      return [
        this.ev({
          type: 'response.output_text.done',
          item_id: o.item.id,
          output_index: o.index,
          content_index: 0,
          text: o.text,
          logprobs: [],
        }),
        this.ev({
          type: 'response.content_part.done',
          item_id: o.item.id,
          output_index: o.index,
          content_index: 0,
          part,
        }),
        this.ev({ type: 'response.output_item.done', output_index: o.index, item }),
      ];
    }
    const item = (this.output[o.index] = { ...o.item, arguments: o.text, status: 'completed' });
    return [
      this.ev({
        type: 'response.function_call_arguments.done',
        item_id: o.item.id,
        output_index: o.index,
        arguments: o.text,
      }),
      this.ev({ type: 'response.output_item.done', output_index: o.index, item }),
    ];
  }
}

export const chatBridge: Bridge<ResponsesRequest, ResponseObject, ResponseEvent, 'chat'> = {
  via: 'chat',
  when: (_model, native) => !native,
  request: (body) => toChatRequest(body),
  answer: (res, body) => fromChatResponse(res as ChatResponse, body),
  stream: (body, model) => new ChatToResponsesStream(body, model) as StreamMapper<ChatChunk, ResponseEvent>,
};
