/**
 * A fake Anthropic Messages API on loopback: real HTTP, real SSE framing, byte for byte as Anthropic sends it
 * (`event: <type>\ndata: <json>\n\n` for message_start, content_block_start, ping, content_block_delta...,
 * content_block_stop, message_delta, message_stop). It checks what Anthropic checks most often (key and version
 * headers, max_tokens, alternating roles, non-empty text, temperature range) and answers with Anthropic's error shape.
 * Tests script its answers with `plan`, and read what it received from `requests`.
 */
import { FakeUpstream, type Item, type Plan as BasePlan, type Received } from './fakeUpstream';

export type { Received };

/** An Anthropic stream event: it carries its own `type`. */
type Event = { type: string; [k: string]: unknown };

/** An Anthropic stream event, raw bytes, or a pause. */
export type SseItem = Item<Event>;

export type Plan = BasePlan<Event>;

export type Block =
  { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

export interface Message {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Block[];
  stop_reason: string | null;
  stop_sequence: string | null;
  usage: Usage;
}

export const API_KEY = 'sk-ant-fake-upstream-key';

export class FakeAnthropic extends FakeUpstream<Event> {
  constructor() {
    super({
      base: '/v1',
      defaultPlan,
      check,
      frame: sse,
      headers: (n) => ({ 'request-id': `req_fake${n}`, 'anthropic-organization-id': 'org-fake' }),
    });
  }
}

/** One event as Anthropic frames it. */
export const sse = (ev: { type: string }): string => `event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`;

export const errorBody = (type: string, message: string) => ({ type: 'error', error: { type, message } });

/** The checks Anthropic makes that a translation bug would trip; null if the request is acceptable. */
function check(r: Received): Plan | null {
  const fail = (status: number, type: string, message: string): Plan => ({
    kind: 'json',
    status,
    body: errorBody(type, message),
  });
  const counting = r.path === '/v1/messages/count_tokens';
  if (r.method !== 'POST' || (r.path !== '/v1/messages' && !counting)) return fail(404, 'not_found_error', 'Not found');
  if (r.headers['x-api-key'] !== API_KEY) return fail(401, 'authentication_error', 'invalid x-api-key');
  if (!r.headers['anthropic-version'])
    return fail(400, 'invalid_request_error', 'anthropic-version: header is required');
  const b = r.body;
  if (!b || typeof b !== 'object') return fail(400, 'invalid_request_error', 'There was an issue with the JSON body');
  if (typeof b.model !== 'string') return fail(400, 'invalid_request_error', 'model: Field required');
  if (counting && 'max_tokens' in b)
    return fail(400, 'invalid_request_error', 'max_tokens: Extra inputs are not permitted');
  if (!counting && (!Number.isInteger(b.max_tokens) || b.max_tokens < 1))
    return fail(400, 'invalid_request_error', 'max_tokens: Field required');
  if (!Array.isArray(b.messages) || b.messages.length === 0)
    return fail(400, 'invalid_request_error', 'messages: at least one message is required');
  if (b.temperature !== undefined && (b.temperature < 0 || b.temperature > 1)) {
    return fail(400, 'invalid_request_error', 'temperature: Input should be less than or equal to 1');
  }
  for (const k of [
    'n',
    'seed',
    'frequency_penalty',
    'presence_penalty',
    'response_format',
    'logprobs',
    'stream_options',
    'user',
    'max_completion_tokens',
    'stop',
  ]) {
    if (k in b) return fail(400, 'invalid_request_error', `${k}: Extra inputs are not permitted`);
  }
  for (let i = 0; i < b.messages.length; i++) {
    const m = b.messages[i];
    if (m.role !== 'user' && m.role !== 'assistant')
      return fail(400, 'invalid_request_error', `messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (i > 0 && b.messages[i - 1].role === m.role)
      return fail(400, 'invalid_request_error', 'messages: roles must alternate between "user" and "assistant"');
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    for (let j = 0; j < blocks.length; j++) {
      if (blocks[j].type === 'text' && !blocks[j].text) {
        return fail(
          400,
          'invalid_request_error',
          `messages.${i}.content.${j}.text: text content blocks must be non-empty`,
        );
      }
      if (blocks[j].type === 'tool_use' && (typeof blocks[j].input !== 'object' || Array.isArray(blocks[j].input))) {
        return fail(
          400,
          'invalid_request_error',
          `messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`,
        );
      }
    }
  }
  return null;
}

let seq = 0;

/** A whole Messages answer. */
export function message(
  content: Block[],
  o: { model?: string; stop_reason?: string; stop_sequence?: string | null; usage?: Partial<Usage>; id?: string } = {},
): Message {
  return {
    id: o.id ?? `msg_fake${++seq}`,
    type: 'message',
    role: 'assistant',
    model: o.model ?? 'claude-fake',
    content,
    stop_reason: o.stop_reason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn'),
    stop_sequence: o.stop_sequence ?? null,
    usage: { input_tokens: 10, output_tokens: 5, ...o.usage },
  };
}

/**
 * The events Anthropic streams for `msg`: message_start (usage so far, output_tokens 1), each block opened, filled
 * (text by words, tool input as JSON cut in small pieces after an empty first piece) and closed, a ping after the
 * first block opens, message_delta with the stop reason and the final output_tokens, message_stop.
 */
export function streamEvents(msg: Message): { type: string; [k: string]: unknown }[] {
  const { content, stop_reason, stop_sequence, usage, ...rest } = msg;
  const events: { type: string; [k: string]: unknown }[] = [
    {
      type: 'message_start',
      message: { ...rest, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    },
  ];
  content.forEach((b, index) => {
    if (b.type === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      if (index === 0) events.push({ type: 'ping' });
      for (const piece of b.text.split(/(?= )/))
        events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
    } else {
      events.push({
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} },
      });
      if (index === 0) events.push({ type: 'ping' });
      const json = JSON.stringify(b.input);
      const pieces = [''];
      for (let i = 0; i < json.length; i += 7) pieces.push(json.slice(i, i + 7));
      for (const p of pieces)
        events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: p } });
    }
    events.push({ type: 'content_block_stop', index });
  });
  events.push({
    type: 'message_delta',
    delta: { stop_reason, stop_sequence },
    usage: { output_tokens: usage.output_tokens },
  });
  events.push({ type: 'message_stop' });
  return events;
}

function lastUserText(body: any): string {
  const m = [...(body.messages ?? [])].reverse().find((x: any) => x.role === 'user');
  if (typeof m?.content === 'string') return m.content;
  return (m?.content ?? [])
    .filter((b: any) => b.type === 'text')
    .map((b: any) => b.text)
    .join(' ');
}

/** What the fake answers by default: the user's words echoed back (count_tokens: a token per word, plus 3). */
export function defaultPlan(r: Received): Plan {
  if (r.path === '/v1/messages/count_tokens')
    return { kind: 'json', body: { input_tokens: 3 + JSON.stringify(r.body.messages).split(' ').length } };
  const text = `Echo: ${lastUserText(r.body)}`;
  const msg = message([{ type: 'text', text }], {
    model: r.body.model,
    usage: { input_tokens: 10, output_tokens: text.split(' ').length },
  });
  return r.body.stream ? { kind: 'sse', events: streamEvents(msg) } : { kind: 'json', body: msg };
}
