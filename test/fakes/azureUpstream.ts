/**
 * A fake Azure OpenAI resource on loopback, as Azure answers: per deployment
 * (`POST /openai/deployments/{deployment}/{chat/completions|completions|embeddings|images/generations|audio/speech|
 * moderations}?api-version=`), the key in an `api-key` header, OpenAI's body shapes plus Azure's content-filter
 * results (a stream starts with a chunk whose `choices` is empty and carries `prompt_filter_results`), and Azure's
 * errors (`{"error":{"code","message"}}`: 401 for a wrong key, 404 DeploymentNotFound, 400 for an api-version it does
 * not know, or for max_tokens and max_completion_tokens together). Images are DALL·E 3's
 * (test/fakes/openaiUpstream.ts); speech answers with the audio's bytes; moderations are OpenAI's.
 */
import { FakeUpstream, type Plan, type Received } from './fakeUpstream';
import { imagesPlan, moderation, speechAudio } from './openaiUpstream';

export type { Plan, Received };

export const AZURE_KEY = 'azure-fake-key-0123456789';
export const DEPLOYMENTS = ['gpt4o-prod', 'embed-prod', 'dalle-prod', 'tts-prod', 'moderation-prod'];
const VERSIONS = ['2024-10-21', '2025-01-01-preview', '2025-03-01-preview'];
const CREATED = 1_735_689_600;
const FILTER = {
  hate: { filtered: false, severity: 'safe' },
  self_harm: { filtered: false, severity: 'safe' },
  sexual: { filtered: false, severity: 'safe' },
  violence: { filtered: false, severity: 'safe' },
};

const error = (status: number, code: string, message: string): Plan => ({
  kind: 'json',
  status,
  body: { error: { code, message } },
});

function check(r: Received): Plan | null {
  if (r.headers['api-key'] !== AZURE_KEY)
    return error(401, '401', 'Access denied due to invalid subscription key or wrong API endpoint.');
  const m =
    /^\/openai\/deployments\/([^/]+)\/(chat\/completions|completions|embeddings|images\/generations|audio\/speech|moderations)\?api-version=([^&]+)$/.exec(
      r.path,
    );
  if (!m) return error(404, '404', 'Resource not found');
  if (!VERSIONS.includes(decodeURIComponent(m[3]))) return error(400, 'BadRequest', 'API version not supported');
  if (!DEPLOYMENTS.includes(decodeURIComponent(m[1])))
    return error(404, 'DeploymentNotFound', 'The API deployment for this resource does not exist.');
  if (r.body?.max_tokens != null && r.body?.max_completion_tokens != null) {
    return error(
      400,
      'invalid_parameter_combination',
      "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.",
    );
  }
  return null;
}

function defaultPlan(r: Received): Plan {
  const body = r.body ?? {};
  const deployment = decodeURIComponent(r.path.split('/')[3]);
  if (r.path.includes('/images/generations?')) return imagesPlan({ ...body, model: 'dall-e-3' });
  if (r.path.includes('/audio/speech?')) return { kind: 'bytes', type: 'audio/wav', pieces: [speechAudio(body)] };
  if (r.path.includes('/moderations?'))
    return { kind: 'json', body: { ...(moderation(body) as object), model: 'omni' } };
  if (r.path.includes('/embeddings?')) {
    const inputs: unknown[] = typeof body.input === 'string' ? [body.input] : body.input;
    return {
      kind: 'json',
      body: {
        object: 'list',
        model: 'text-embedding-3-small',
        data: inputs.map((_x, index) => ({ object: 'embedding', index, embedding: [0.1, 0.2, 0.3] })),
        usage: { prompt_tokens: inputs.length * 3, total_tokens: inputs.length * 3 },
      },
    };
  }
  const text = 'Hello from Azure.';
  const usage = {
    prompt_tokens: 12,
    completion_tokens: 4,
    total_tokens: 16,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
  const base = { id: 'chatcmpl-azure1', created: CREATED, model: 'gpt-4o-2024-11-20', system_fingerprint: 'fp_azure' };
  if (!body.stream) {
    return {
      kind: 'json',
      body: {
        ...base,
        object: 'chat.completion',
        prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTER }],
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: text, refusal: null },
            logprobs: null,
            finish_reason: 'stop',
            content_filter_results: FILTER,
          },
        ],
        usage,
        deployment,
      },
    };
  }
  const chunk = (choices: unknown[], extra: object = {}) => ({
    ...base,
    object: 'chat.completion.chunk',
    choices,
    ...extra,
  });
  const events: unknown[] = [
    {
      id: '',
      object: '',
      created: 0,
      model: '',
      choices: [],
      prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTER }],
    },
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, content_filter_results: {} }]),
    ...['Hello', ' from', ' Azure.'].map((p) =>
      chunk([{ index: 0, delta: { content: p }, finish_reason: null, content_filter_results: FILTER }]),
    ),
    chunk([{ index: 0, delta: {}, finish_reason: 'stop', content_filter_results: {} }]),
  ];
  if (body.stream_options?.include_usage) events.push(chunk([], { usage }));
  return { kind: 'sse', events };
}

export class FakeAzure extends FakeUpstream {
  constructor() {
    super({
      base: '',
      keepAliveMs: 5000,
      defaultPlan,
      check,
      frame: (ev) => `data: ${JSON.stringify(ev)}\n\n`,
      end: 'data: [DONE]\n\n',
    });
  }
}
