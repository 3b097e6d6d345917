/**
 * POST /v1/responses: OpenAI's Responses API. An `openai` route serves it natively (sent as written, with the
 * upstream's model id, the output allowance in max_output_tokens and `store: false`: the gateway keeps responses
 * itself, see services/responses.ts); any other chat route serves it through chat (responsesChat.ts). Events are
 * framed as OpenAI frames them (`event: <type>`, `data: <event>`).
 */
import type { ModelConfig } from '../../config';
import { isCount, type Usage } from '../../usage';
import { streamErrorOf } from '../router';
import type { ResponseEvent, ResponseObject, ResponsesRequest } from '../types';
import { errors } from '../../errors';
import { collect } from './openai';
import { allows, keepTools, responsesTool, standardTier } from './policy';
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

const NOT_TEXT = new Set([
  'type',
  'id',
  'role',
  'status',
  'call_id',
  'name',
  'detail',
  'annotations',
  'encrypted_content',
]);

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
  // Every delta; and a reasoning item's encrypted content, which comes whole when the item is done (the reasoning
  // it stands for is billed as output, and no delta ever shows it).
  chunkText(ev) {
    if (typeof ev.delta === 'string') return ev.delta;
    const item =
      ev.type === 'response.output_item.done'
        ? (ev.item as { type?: unknown; encrypted_content?: unknown } | undefined)
        : undefined;
    return item?.type === 'reasoning' && typeof item.encrypted_content === 'string' ? item.encrypted_content : '';
  },
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
    const response = {
      id: responseId(requestId),
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'failed',
      model,
      output: [],
      error: { code: 'server_error', message: err.message },
      incomplete_details: null,
    };
    return (
      frame({ type: 'error', code: err.code, message: err.message, param: err.param, sequence_number: next } as never) +
      frame({ type: 'response.failed', sequence_number: next + 1, response } as never)
    );
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

/**
 * What a request may not point at: anything stored in the operator's own upstream account — another tenant's, or
 * the operator's, and billed as input the request does not show — and background mode, whose answer (and its cost)
 * would come after the gateway settled.
 */
function refuseStored(body: ResponsesRequest): void {
  const b = body as ResponsesRequest & { prompt?: unknown; conversation?: unknown; background?: unknown };
  if (b.prompt != null)
    throw errors.invalidRequest(
      'Prompts stored at the provider (prompt) cannot be used through this gateway: send the instructions and input themselves',
      'prompt',
    );
  if (b.conversation != null)
    throw errors.invalidRequest(
      'Conversations stored at the provider (conversation) cannot be used through this gateway: continue one with previous_response_id',
      'conversation',
    );
  const at = Array.isArray(b.input) ? b.input.findIndex(isReference) : -1;
  if (at >= 0)
    throw errors.invalidRequest(
      `Items stored at the provider (item_reference, input[${at}]) cannot be used through this gateway: send the items themselves`,
      'input',
    );
  if (b.background === true)
    throw errors.invalidRequest(
      'Background responses cannot be served through this gateway: leave background unset (stream for long answers)',
      'background',
    );
}

/**
 * An item stored at the provider: `type: item_reference`, or an `id` with neither a `role` nor a `type` of its own —
 * the SDKs' ItemReference, whose `type` is optional, and which OpenAI reads as a reference. Checked in `features`,
 * so a bridged route refuses it too (chat would drop it unseen), before any token or money is counted.
 */
function isReference(item: unknown): boolean {
  const i = item as { type?: unknown; role?: unknown; id?: unknown } | null;
  return i?.type === 'item_reference' || (i?.id != null && i.type == null && i.role == null);
}

export const responses: Operation<ResponsesRequest, ResponseObject, ResponseEvent> = {
  name: 'responses',
  genAi: 'chat',
  path: '/v1/responses',
  upstream: 'responses',
  reader,
  bridge: chatBridge,
  streams: (body) => body.stream === true,
  includeUsage: () => false,
  output: (body, model) => ({ perChoice: body.max_output_tokens ?? model.max_output_tokens, choices: 1 }),
  features(body, model: ModelConfig) {
    refuseStored(body);
    let out = standardTier(body, model);
    const tools = keepTools(out.tools, responsesTool(model));
    if (tools !== out.tools) out = { ...out, tools: tools ?? undefined };
    // compaction: a summarising pass over the whole conversation, billed on top of the answer
    const cm = (out as { context_management?: unknown }).context_management;
    if (cm != null && !allows(model, 'server_tools')) {
      const { context_management: _stripped, ...rest } = out as ResponsesRequest & { context_management?: unknown };
      out = rest;
    }
    return out;
  },
  // The gateway keeps responses (services/responses.ts): each gets an id of the gateway's, from its request's.
  present: (res, p, body) => ({
    ...res,
    ...shown(p.requestId, p.model, body),
    usage: p.reported && res.usage ? res.usage : responseUsage(p.usage),
  }),
  presentChunk: (ev, { model, requestId, body }) =>
    ev.response ? { ...ev, response: { ...ev.response, ...shown(requestId, model, body as ResponsesRequest) } } : ev,
  finalAnswer: (ev) => (ENDS.has(ev.type) && ev.response ? ev.response : null),
  tail: () => [],
  framing: RESPONSES_SSE,
};
