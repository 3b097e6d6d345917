/** POST /v1/embeddings: vectors as floats or as base64 of little-endian float32, as the client asks. */
import type { EmbeddingRequest, EmbeddingResponse } from '../types';
import { readUsage } from './openai';
import type { Operation, Reader } from './types';

const reader: Reader<EmbeddingRequest, EmbeddingResponse, never> = {
  // Embedding answers report prompt tokens only.
  usage: (res) => readUsage(res.usage ? { ...res.usage, completion_tokens: 0 } : null),
  chunkUsage: (_chunk, previous) => previous,
  prompt: (body) => ({ kind: 'input', input: body.input }),
  answerText: () => '',
  chunkText: () => '',
};

export const embeddings: Operation<EmbeddingRequest, EmbeddingResponse, never> = {
  name: 'embeddings',
  genAi: 'embeddings',
  path: '/v1/embeddings',
  upstream: 'embeddings',
  reader,
  streams: () => false,
  includeUsage: () => false,
  output: () => ({ perChoice: 0, choices: 1 }),
  features: (body) => body,
  present(res, p, body) {
    const base64 = body.encoding_format === 'base64';
    return {
      ...res,
      model: p.model,
      usage: { prompt_tokens: p.usage.prompt, total_tokens: p.usage.prompt },
      data: res.data.map((d) => ({ ...d, embedding: base64 ? toBase64(d.embedding) : toFloats(d.embedding) })),
    };
  },
  presentChunk: () => null,
  tail: () => [],
  framing: { frame: () => '', done: '', error: () => '' },
};

/** Embeddings as base64 of little-endian float32, the way OpenAI sends them. */
function toBase64(e: number[] | string): string {
  if (typeof e === 'string') return e;
  const buf = Buffer.alloc(e.length * 4);
  e.forEach((x, i) => buf.writeFloatLE(x, i * 4));
  return buf.toString('base64');
}

function toFloats(e: number[] | string): number[] {
  if (typeof e !== 'string') return e;
  const buf = Buffer.from(e, 'base64');
  return Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(i * 4));
}
