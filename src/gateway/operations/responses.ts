/**
 * POST /v1/responses: OpenAI's Responses API. An `openai` route serves it natively (sent as written, with the
 * upstream's model id, the output allowance in max_output_tokens and `store: false`: the gateway keeps responses
 * itself, see services/responses.ts); any other chat route serves it through chat (responsesChat.ts). Events are
 * framed as OpenAI frames them (`event: <type>`, `data: <event>`).
 */
import type { ModelConfig } from '../../config';
import { errors } from '../../errors';
import { isCount, type Usage } from '../../usage';
import { streamErrorOf } from '../router';
import type { ResponseEvent, ResponseObject, ResponsesRequest } from '../types';
import { collect } from './openai';
import { chatBridge, responseUsage } from './responsesChat';
import type { Framing, Operation, Reader } from './types';

type ResponseUsageShape = NonNullable<ResponseObject['usage']>;

export function fromResponseUsage(u: ResponseUsageShape | null | undefined): Usage | null {
  if (!u || !isCount(u.input_tokens) || !isCount(u.output_tokens)) return null;
  const part = (n: unknown, of: number) => (isCount(n) ? Math.min(n, of) : 0);
  return {
    prompt: u.input_tokens,
    cached: part(u.input_tokens_details?.cached_tokens, u.input_tokens),
    cacheWrite: 0,
    completion: u.output_tokens,
    reasoning: part(u.output_tokens_details?.reasoning_tokens, u.output_tokens),
  };
}

/** The events that end a stream carry the whole response. */
const ENDS = new Set(['response.completed', 'response.incomplete', 'response.failed']);

const NOT_TEXT = new Set(['type', 'id', 'role', 'status', 'call_id', 'name', 'detail', 'annotations', 'encrypted_content']);

const reader: Reader<ResponsesRequest, ResponseObject, ResponseEvent> = {
  usage: (res) => fromResponseUsage(res.usage),
  chunkUsage(ev, previous) {
    if (!ENDS.has(ev.type)) return previous;
    const u = fromResponseUsage(ev.response?.usage);
    return u ? { usage: u, final: true } : previous;
  },
  prompt(body) {
    const out: string[] = [];
    collect([body.instructions, body.input, body.tools], NOT_TEXT, out);
    return { kind: 'text', text: out.join('\n') };
  },
  answerText(res) {
    const out: string[] = [];
    collect(res.output, NOT_TEXT, out);
    return out.join('');
  },
  chunkText: (ev) => (typeof ev.delta === 'string' ? ev.delta : ''),
};

const frame = (ev: { type: string }) => `event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`;

/**
 * OpenAI's framing: `event: <type>` and `data: <event>`, no end marker. A stream that fails after it started ends
 * as OpenAI's do: an `error` event, then `response.failed` with the error (the SDKs' final response is the failed
 * one), numbered on from the last event the client got.
 */
export const RESPONSES_SSE: Framing = {
  frame: (ev) => frame(ev as { type: string }),
  done: '',
  error: (e, { last, model, requestId }) => {
    const err = streamErrorOf(e);
    const seq = (last as Partial<ResponseEvent> | undefined)?.sequence_number;
    const next = typeof seq === 'number' ? seq + 1 : 0;
    const response = { id: responseId(requestId), object: 'response', created_at: Math.floor(Date.now() / 1000), status: 'failed', model, output: [], error: { code: 'server_error', message: err.message }, incomplete_details: null };
    return frame({ type: 'error', code: err.code, message: err.message, param: err.param, sequence_number: next } as never) + frame({ type: 'response.failed', sequence_number: next + 1, response } as never);
  },
};

/** A response's id: the gateway's request id (`req_<32 hex>` → `resp_<32 hex>`). */
export const responseId = (requestId: string) => `resp_${requestId.replace(/^req_/, '')}`;

/**
 * What a response shows of the gateway's part: its id, the model asked for, and the request's own storage settings
 * and limit (the upstream was sent `store: false`, no previous_response_id and the allowance, not the client's).
 */
const shown = (requestId: string, model: string, body: ResponsesRequest) => ({
  id: responseId(requestId),
  model,
  store: body.store !== false,
  previous_response_id: body.previous_response_id ?? null,
  max_output_tokens: body.max_output_tokens ?? null,
});

/** Tools that bill beyond tokens (per search, per container, per image) or reach into the operator's own account. */
const COSTLY = /^(web_search|file_search|code_interpreter|image_generation|computer_use|mcp)/;

/**
 * What is stored at the upstream, in the operator's own account, and would be read into the prompt there: a
 * conversation, a stored prompt, an item by reference. Its size is unknown to the hold, and it is not the caller's.
 */
function refuseStored(body: ResponsesRequest): void {
  const b = body as ResponsesRequest & { conversation?: unknown; prompt?: unknown };
  const stored = (param: string) => errors.invalidRequest(`'${param}' refers to what is stored at the provider, which cannot be used through this gateway: send the items themselves (or continue with previous_response_id)`, param);
  if (b.conversation != null) throw stored('conversation');
  if (b.prompt != null) throw stored('prompt');
  if (Array.isArray(b.input) && b.input.some((i) => i?.type === 'item_reference')) throw stored('input');
}

export const responses: Operation<ResponsesRequest, ResponseObject, ResponseEvent> = {
  name: 'responses',
  path: '/v1/responses',
  serves: ['chat'],
  upstream: 'responses',
  reader,
  bridge: chatBridge,
  streams: (body) => body.stream === true,
  includeUsage: () => false,
  output: (body, model) => ({ perChoice: body.max_output_tokens ?? model.max_output_tokens, choices: 1 }),
  features(body, model: ModelConfig) {
    refuseStored(body);
    let out = body;
    if (typeof body.service_tier === 'string' && ['priority', 'scale'].includes(body.service_tier) && !model.allow.includes('priority')) {
      const { service_tier: _stripped, ...rest } = body;
      out = rest;
    }
    const allowed = (t: { type: string }) => !COSTLY.test(t.type) || (model.allow.includes('web_search') && t.type.startsWith('web_search'));
    if (out.tools?.some((t) => !allowed(t))) out = { ...out, tools: out.tools.filter(allowed) };
    return out;
  },
  // The gateway keeps responses (services/responses.ts): each gets an id of the gateway's, from its request's.
  present: (res, p, body) => ({ ...res, ...shown(p.requestId, p.model, body), usage: p.reported && res.usage ? res.usage : responseUsage(p.usage) }),
  presentChunk: (ev, { model, requestId, body }) => (ev.response ? { ...ev, response: { ...ev.response, ...shown(requestId, model, body as ResponsesRequest) } } : ev),
  finalAnswer: (ev) => (ENDS.has(ev.type) && ev.response ? ev.response : null),
  tail: () => [],
  framing: RESPONSES_SSE,
};
