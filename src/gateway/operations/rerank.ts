/**
 * POST /v1/rerank: documents ordered by relevance to a query, in the shape Cohere, Jina and vLLM share. Priced per
 * input token and, where the model sets `price.search_unit`, per search unit (Cohere's: a query over up to 100
 * documents, counted here from the request, so that the hold covers it exactly).
 *
 * A reranker (a cross-encoder) reads the query once with every document: vLLM reports, and Jina bills, the tokens of
 * every (query, document) pair. So the prompt bound counts all that is not a document once per document, plus what a
 * reranker's template adds to each pair; and when the upstream reports no tokens, the tokenizer counts the query once
 * per document too, so that a route that reports and one that does not charge alike.
 */
import { isCount, usage, type Units } from '../../usage';
import { inspect, promptBound } from '../bound';
import type { RerankRequest, RerankResponse } from '../types';
import type { Operation, Reader } from './types';

/** Documents in one search unit (Cohere's rerank pricing). */
export const SEARCH_UNIT_DOCUMENTS = 100;

/**
 * Tokens a reranker adds to each (query, document) pair: a BERT-style cross-encoder 3 or 4 ([CLS], [SEP]), an LLM
 * reranker its prompt template (Qwen3-Reranker's, with its default instruction, about 80).
 */
export const PAIR_TOKENS = 128;

type Document = RerankRequest['documents'][number];
const textOf = (d: Document | undefined): string | undefined => (typeof d === 'string' ? d : d?.text);

const searchUnits = (body: RerankRequest): Units => ({
  searchUnits: Math.ceil(body.documents.length / SEARCH_UNIT_DOCUMENTS),
});

const reader: Reader<RerankRequest, RerankResponse, never> = {
  // vLLM and Jina report `usage.total_tokens` (all input: a rerank generates nothing); Cohere reports none.
  usage: (res) => {
    const u = (res as { usage?: { prompt_tokens?: unknown; total_tokens?: unknown } }).usage;
    const tokens = isCount(u?.prompt_tokens) ? u.prompt_tokens : isCount(u?.total_tokens) ? u.total_tokens : null;
    return tokens === null ? null : usage(tokens, 0);
  },
  chunkUsage: (_chunk, previous) => previous,
  prompt: (body) => ({ kind: 'rerank', query: body.query, documents: body.documents.map((d) => textOf(d) ?? '') }),
  answerText: () => '',
  chunkText: () => '',
};

export const rerank: Operation<RerankRequest, RerankResponse, never> = {
  name: 'rerank',
  path: '/v1/rerank',
  upstream: 'rerank',
  reader,
  streams: () => false,
  includeUsage: () => false,
  output: () => ({ perChoice: 0, choices: 1 }),
  promptBound(body, profile, model) {
    const documents = body.documents.length;
    const rest = Math.max(0, profile.textBytes - inspect(body.documents).textBytes);
    return promptBound(profile, model) + documents * (rest + PAIR_TOKENS);
  },
  units: searchUnits,
  // Documents carry text only (the contract refuses any other field of theirs): nothing in a rerank raises its price.
  features: (body) => body,
  present(res, p, body) {
    const { meta: _billedUnits, ...rest } = res as RerankResponse & { meta?: unknown };
    return {
      ...rest,
      model: p.model,
      results: res.results.map((r) => shownResult(r, body)),
      usage: {
        prompt_tokens: p.usage.prompt,
        total_tokens: p.usage.prompt,
        search_units: searchUnits(body).searchUnits!,
      },
    };
  },
  presentChunk: () => null,
  tail: () => [],
  framing: { frame: () => '', done: '', error: () => '' },
};

/**
 * A result as the client asked for it: `return_documents: true` gives each its document's text (Cohere's v2 API no
 * longer returns it), `false` none (vLLM always returns it); left out, as the upstream answered.
 */
function shownResult(r: RerankResponse['results'][number], body: RerankRequest): RerankResponse['results'][number] {
  const { document, ...result } = r;
  if (body.return_documents === false) return result;
  const text = textOf(body.documents[r.index]);
  if (body.return_documents === true && !document && text !== undefined) return { ...result, document: { text } };
  return r;
}
