/**
 * Provider `bedrock`: Amazon Bedrock Runtime (https://bedrock-runtime.<region>.amazonaws.com), every request signed
 * with SigV4 (auth.ts). Chat goes through the Converse API (ConverseStream for streams, in AWS's binary event-stream
 * framing: eventstream.ts); `/v1/messages` on Claude natively through InvokeModel(WithResponseStream); embeddings
 * through InvokeModel for Titan Text Embeddings v2 and Cohere Embed. The route's model is a Bedrock model id or an
 * inference profile id (`us.anthropic.claude-…`, an ARN), escaped into the path.
 */
import type { ChatChunk } from '../../types';
import { eventObject } from '../http';
import { unixNow } from '../shared';
import { defineProvider, type CallContext } from '../types';
import { regionOf, sign, signer } from './auth';
import { isClaude, toConverseRequest } from './converse';
import { ConverseStreamTranslator, fromConverseResponse, type StreamEvent } from './converseAnswer';
import { readError } from './errors';
import { eventStream } from './eventstream';
import { UpstreamError } from '../../types';
import {
  anthropicEvents,
  fromInvokeEmbeddings,
  fromInvokeMessages,
  toInvokeEmbeddings,
  toInvokeMessages,
} from './invoke';
import type { ConverseResponse } from './wire';

/** `/model/{modelId}/{action}`: the id escaped whole (an inference profile ARN has slashes and colons). */
const modelPath = (ctx: CallContext, action: string) => `/model/${encodeURIComponent(ctx.model)}/${action}`;

const credential = { type: 'string', minLength: 1 };

export const bedrock = defineProvider({
  type: 'bedrock',
  genAi: 'aws.bedrock',
  baseUrl: (settings) => `https://bedrock-runtime.${regionOf(settings)}.amazonaws.com`,
  settings: {
    region: { type: 'string', pattern: '^[a-z]{2}(-gov)?-[a-z]+-\\d$' },
    access_key_id: credential,
    secret_access_key: credential,
    session_token: credential,
  },
  // The key id names the key (AWS shows it in its console); the secret and a session token are the credentials.
  secrets: ['secret_access_key', 'session_token'],
  // Claude's cache prices on Bedrock are Anthropic's: reads 0.1× input, 5-minute writes 1.25×, 1-hour writes 2×.
  cache: { cached_input: 100, cache_write: 1250, cache_write_1h: 2000 },
  // One signer per configured provider: the credential chain it holds caches and refreshes its credentials.
  state: (config) => ({ signer: signer(config) }),
  sign: (request, _config, state) => sign(request, state.signer),
  errors: readError,
  // InvokeModel takes each model's own body: Anthropic's Messages only for Claude; other models' /v1/messages go
  // through chat (Converse).
  natively: (op, model) => op !== 'messages' || isClaude(model),
  operations: {
    chat: {
      path: (ctx) => modelPath(ctx, ctx.stream ? 'converse-stream' : 'converse'),
      request: (body, ctx) => toConverseRequest(body, ctx.model, ctx.maxOutputTokens),
      response: (json, ctx) => fromConverseResponse(json as ConverseResponse, ctx.model, unixNow()),
      async *stream(events, ctx): AsyncGenerator<ChatChunk> {
        const t = new ConverseStreamTranslator(unixNow(), ctx.model);
        for await (const ev of events) {
          yield* t.push({ ...eventObject(ev.data), type: ev.event } as StreamEvent);
          if (t.done) return;
        }
        throw new UpstreamError('protocol', 'the upstream stream ended before its usage (metadata)');
      },
      framing: eventStream,
    },
    // Claude's Messages natively: cache_control, thinking and betas go through as the client wrote them.
    messages: {
      path: (ctx) => modelPath(ctx, ctx.stream ? 'invoke-with-response-stream' : 'invoke'),
      request: (body, ctx) => toInvokeMessages(body, ctx.model, ctx.maxOutputTokens, ctx.headers),
      response: fromInvokeMessages,
      stream: (events) => anthropicEvents(events),
      framing: eventStream,
    },
    embeddings: {
      path: (ctx) => modelPath(ctx, 'invoke'),
      request: (body, ctx) => toInvokeEmbeddings(body, ctx.model),
      response: (json, ctx, body) => fromInvokeEmbeddings(json, ctx.model, body),
    },
  },
});
