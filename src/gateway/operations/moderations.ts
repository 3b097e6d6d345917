/**
 * POST /v1/moderations: whether text and images are potentially harmful, as OpenAI classifies them. Priced per
 * request (the `moderation` usage class: one per request, known before it is sent, so the hold is exact); its text
 * is counted in tokens too (OpenAI reports none), which a model prices at `input` if the operator wants to.
 */
import { isCount, usage } from '../../usage';
import type { ModerationRequest, ModerationResponse } from '../types';
import type { Operation, Reader } from './types';

/** The model a request that names none asks for: OpenAI's default, as the contract says. */
export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest';

export type ModerationCall = ModerationRequest & { model: string };

/** The request with its model: the one it names, or OpenAI's default. */
export const withModel = (body: ModerationRequest): ModerationCall => ({
  ...body,
  model: body.model ?? DEFAULT_MODERATION_MODEL,
});

/** The texts of an input: a string, strings, or the text parts of a multimodal input (images are not text). */
function texts(input: ModerationRequest['input']): string[] {
  if (typeof input === 'string') return [input];
  return input.map((x) => (typeof x === 'string' ? x : x.type === 'text' ? x.text : ''));
}

const reader: Reader<ModerationCall, ModerationResponse, never> = {
  // OpenAI reports no usage for moderations; a compatible server that reports its prompt tokens is believed.
  usage: (res) => {
    const reported = (res as { usage?: { prompt_tokens?: unknown } }).usage?.prompt_tokens;
    return isCount(reported) ? usage(reported, 0) : null;
  },
  chunkUsage: (_chunk, previous) => previous,
  prompt: (body) => ({ kind: 'input', input: texts(body.input) }),
  answerText: () => '',
  chunkText: () => '',
};

export const moderations: Operation<ModerationCall, ModerationResponse, never> = {
  name: 'moderations',
  path: '/v1/moderations',
  upstream: 'moderations',
  reader,
  streams: () => false,
  includeUsage: () => false,
  output: () => ({ perChoice: 0, choices: 1 }),
  units: () => ({ moderations: 1 }),
  // Nothing in a moderation raises its price: its images are held at the model's `image_tokens` (bound.ts).
  features: (body) => body,
  present: (res, p) => ({ ...res, model: p.model }),
  presentChunk: () => null,
  tail: () => [],
  framing: { frame: () => '', done: '', error: () => '' },
};
