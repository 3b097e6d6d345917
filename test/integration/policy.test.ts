/**
 * Every operation that sends a body upstream, against every policy rule: what would make the operator pay more than
 * the model's token prices (or read the operator's own upstream account) is refused before anything is sent, or
 * stripped from what is sent — on count_tokens as on the paid operations. The table must name every metered
 * operation and, for each, every rule (a probe, or why the rule cannot apply): a new operation or a new feature
 * fails here until someone has decided what it does with each.
 * On the database in DATABASE_URL (SQLite by default, MariaDB in the second pass).
 */
import { API_KEY, FakeAnthropic } from '../fakes/anthropicUpstream';
import type { FakeUpstream, Received } from '../fakes/fakeUpstream';
import { FakeOpenAI } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { FEATURES, type Feature } from '../../src/config';
import { ENDPOINTS, type OperationId } from '../../src/contract';

/** The operations that send a body upstream: those the contract calls paid or metered (the key's money is checked). */
type Metered = {
  [Id in OperationId]: (typeof ENDPOINTS)[Id] extends { meter: 'paid' | 'metered' } ? Id : never;
}[OperationId];
const METERED = Object.entries(ENDPOINTS).flatMap(([id, e]) =>
  'meter' in e && (e.meter === 'paid' || e.meter === 'metered') ? [id] : [],
);

let openai: FakeOpenAI;
let claude: FakeAnthropic;
let gw: TestGateway;
let secret: string;

beforeAll(async () => {
  openai = await new FakeOpenAI().start();
  claude = await new FakeAnthropic().start();
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
routing: { breaker_failures: 1000 }
providers:
  oa: { type: openai, base_url: "${openai.url}" }
  an: { type: anthropic, base_url: "${claude.url}", api_key: "\${FAKE_ANTHROPIC_KEY}" }
models:
  - { id: gpt, kind: chat, price: { input: 1, output: 4 }, routes: [ { provider: oa } ] }
  - { id: instruct, kind: completion, price: { input: 1.5, output: 2 }, routes: [ { provider: oa } ] }
  - { id: embed, kind: embedding, price: { input: 0.02 }, routes: [ { provider: oa } ] }
  - { id: tts, kind: speech, price: { characters: 15 }, routes: [ { provider: oa } ] }
  - { id: claude, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: an } ] }
  - { id: dalle, kind: image, price: { images: { 1024x1024/standard: 0.04 } }, routes: [ { provider: oa, model: dall-e-3 } ] }
  - { id: moderate, kind: moderation, price: { moderation: 1000 }, routes: [ { provider: oa } ] }
  - { id: rank, kind: rerank, price: { input: 0.05 }, routes: [ { provider: oa } ] }
  - { id: whisper, kind: transcription, price: { audio_seconds: 100 }, routes: [ { provider: oa, model: whisper-1 } ] }
  - { id: dalle2, kind: image, price: { images: { 1024x1024/standard: 0.02 } }, routes: [ { provider: oa, model: dall-e-2 } ] }
`,
    { ...process.env, FAKE_ANTHROPIC_KEY: API_KEY },
  );
  secret = (await gw.newKey()).secret;
});

afterAll(async () => {
  await gw?.close();
  await openai?.close();
  await claude?.close();
});

/** What is stored in the operator's upstream account (files, items, prompts, conversations), and every feature. */
type Rule = 'stored' | Feature;
const RULES: Rule[] = ['stored', ...FEATURES];

/** A probe: a body (and headers) that breaks the rule; either refused (the param named), or what was sent is checked. */
interface Probe {
  body: Record<string, unknown>;
  headers?: Record<string, string>;
  refused?: string | null;
  sent?: (r: Received) => void;
}

interface Op {
  path: string;
  upstream: FakeUpstream<any>;
  /** The body; a Blob in it makes it a multipart form (the operations that take files). */
  base: Record<string, unknown>;
  rules: Record<Rule, Probe[] | string>;
}

const chatBase = { model: 'gpt', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 };
const messagesBase = { model: 'claude', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
const document = (source: object) => ({
  role: 'user',
  content: [
    { type: 'document', source },
    { type: 'text', text: 'summarise' },
  ],
});
const NO_AUDIO = 'Anthropic takes no audio';
const NO_OPENAI_SWITCH = 'OpenAI has no request field that raises its price for this';

/** The Messages rules, the same for /v1/messages and /v1/messages/count_tokens. */
const audioFile = () => new Blob([Buffer.alloc(2_000)], { type: 'audio/wav' });
const pngFile = () => new Blob([Buffer.from('89504e470d0a1a0a', 'hex')], { type: 'image/png' });

/** Transcriptions and translations: an uploaded file, nothing stored upstream, no tools. */
const audioOp = (path: string): Op => ({
  path,
  get upstream() {
    return openai;
  },
  base: { model: 'whisper', file: audioFile() },
  rules: {
    stored: 'the audio is uploaded with the request: nothing stored at the upstream is read',
    priority: [{ body: { service_tier: 'priority' }, sent: (r) => expect(r.body).not.toHaveProperty('service_tier') }],
    audio: "audio in is what transcription is: the model's own prices (seconds, audio tokens) are what it costs",
    web_search: 'a transcription searches nothing',
    server_tools: 'a transcription runs no tools',
    long_context: 'the audio is held at the most its length can cost (audio.ts), whatever its size',
    data_residency: NO_OPENAI_SWITCH,
    cache_1h: 'OpenAI bills no cache writes',
  },
});

const messagesRules = (): Record<Rule, Probe[] | string> => ({
  stored: [
    { body: { messages: [document({ type: 'file', file_id: 'file_011' })] }, refused: null },
    {
      body: { messages: [{ role: 'user', content: [{ type: 'container_upload', file_id: 'file_011' }] }] },
      refused: null,
    },
  ],
  priority: [
    {
      body: { service_tier: 'auto', speed: 'fast' },
      headers: { 'anthropic-beta': 'fast-mode-2026-02-01' },
      sent: (r) => {
        expect(r.body.service_tier).toBe(r.path.endsWith('/count_tokens') ? undefined : 'standard_only');
        expect(r.body.speed).toBeUndefined();
        expect(r.headers['anthropic-beta']).toBeUndefined();
      },
    },
  ],
  audio: NO_AUDIO,
  web_search: [
    {
      body: { tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
      sent: (r) => expect(r.body.tools ?? []).toEqual([]),
    },
  ],
  server_tools: [
    {
      body: {
        mcp_servers: [{ type: 'url', url: 'https://mcp.attacker.example/sse', name: 'x' }],
        container: 'container_011',
        tools: [{ type: 'code_execution_20250825', name: 'code_execution' }],
      },
      headers: { 'anthropic-beta': 'mcp-client-2025-04-04,files-api-2025-04-14,token-efficient-tools-2025-02-19' },
      sent: (r) => {
        expect(r.body).not.toHaveProperty('mcp_servers');
        expect(r.body).not.toHaveProperty('container');
        expect(r.body.tools ?? []).toEqual([]);
        expect(r.headers['anthropic-beta']).toBe('token-efficient-tools-2025-02-19');
      },
    },
  ],
  long_context: [
    {
      body: {},
      headers: { 'anthropic-beta': 'context-1m-2025-08-07' },
      sent: (r) => expect(r.headers['anthropic-beta']).toBeUndefined(),
    },
  ],
  data_residency: [{ body: { inference_geo: 'us' }, sent: (r) => expect(r.body).not.toHaveProperty('inference_geo') }],
  cache_1h: [
    {
      // automatic caching at the top level, a document's inner blocks, a system block, a tool result's content
      body: {
        cache_control: { type: 'ephemeral', ttl: '1h' },
        system: [{ type: 'text', text: 'rules', cache_control: { type: 'ephemeral', ttl: '1h' } }],
        messages: [
          document({
            type: 'content',
            content: [{ type: 'text', text: 'a long document', cache_control: { type: 'ephemeral', ttl: '1h' } }],
          }),
          { role: 'assistant', content: [{ type: 'tool_use', id: 'tu_1', name: 't', input: {} }] },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'tu_1',
                content: [{ type: 'text', text: 'out', cache_control: { type: 'ephemeral', ttl: '1h' } }],
              },
            ],
          },
        ],
        tools: [{ name: 't', input_schema: { type: 'object' } }],
      },
      headers: { 'anthropic-beta': 'extended-cache-ttl-2025-04-11' },
      sent: (r) => {
        expect(JSON.stringify(r.body)).not.toContain('"ttl"');
        expect(r.body.cache_control).toEqual({ type: 'ephemeral' });
        expect(r.body.messages[0].content[0].source.content[0].cache_control).toEqual({ type: 'ephemeral' });
        expect(r.headers['anthropic-beta']).toBeUndefined();
      },
    },
  ],
});

const OPS: Record<Metered, Op> = {
  createChatCompletion: {
    path: '/v1/chat/completions',
    get upstream() {
      return openai;
    },
    base: chatBase,
    rules: {
      stored: [
        {
          body: { messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-abc' } }] }] },
          refused: null,
        },
      ],
      priority: [
        { body: { service_tier: 'priority' }, sent: (r) => expect(r.body).not.toHaveProperty('service_tier') },
      ],
      audio: [
        { body: { modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }, refused: 'audio' },
        {
          body: {
            messages: [
              { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] },
            ],
          },
          refused: null,
        },
      ],
      web_search: [{ body: { web_search_options: {} }, refused: 'web_search_options' }],
      server_tools: [
        {
          body: { data_sources: [{ type: 'azure_search', parameters: { endpoint: 'https://attacker.example' } }] },
          sent: (r) => expect(r.body).not.toHaveProperty('data_sources'),
        },
      ],
      long_context: NO_OPENAI_SWITCH,
      data_residency: NO_OPENAI_SWITCH,
      cache_1h: 'OpenAI bills no cache writes',
    },
  },
  createCompletion: {
    path: '/v1/completions',
    get upstream() {
      return openai;
    },
    base: { model: 'instruct', prompt: 'hi', max_tokens: 16 },
    rules: {
      stored: 'a prompt is text: it cannot point at a stored file',
      priority: [
        { body: { service_tier: 'priority' }, sent: (r) => expect(r.body).not.toHaveProperty('service_tier') },
      ],
      audio: [{ body: { modalities: ['audio'] }, refused: 'modalities' }],
      web_search: [{ body: { web_search_options: {} }, refused: 'web_search_options' }],
      server_tools: [
        {
          body: { data_sources: [{ type: 'azure_search' }] },
          sent: (r) => expect(r.body).not.toHaveProperty('data_sources'),
        },
      ],
      long_context: NO_OPENAI_SWITCH,
      data_residency: NO_OPENAI_SWITCH,
      cache_1h: 'OpenAI bills no cache writes',
    },
  },
  createEmbedding: {
    path: '/v1/embeddings',
    get upstream() {
      return openai;
    },
    base: { model: 'embed', input: 'hi' },
    rules: Object.fromEntries(
      RULES.map((r) => [r, 'embeddings are priced per input token and take text only']),
    ) as Record<Rule, string>,
  },
  createImage: {
    path: '/v1/images/generations',
    get upstream() {
      return openai;
    },
    base: { model: 'dalle', prompt: 'hi', size: '1024x1024', quality: 'standard' },
    rules: {
      // An image answered as a URL is kept in the operator's upstream account (for an hour) and fetched from there.
      stored: [{ body: { response_format: 'url' }, refused: 'response_format' }],
      priority: [
        { body: { service_tier: 'priority' }, sent: (r) => expect(r.body).not.toHaveProperty('service_tier') },
      ],
      audio: 'a generation takes a text prompt only',
      web_search: 'a generation searches nothing',
      server_tools: 'a generation runs no tools',
      long_context: NO_OPENAI_SWITCH,
      data_residency: NO_OPENAI_SWITCH,
      cache_1h: 'OpenAI bills no cache writes',
    },
  },
  createTranscription: audioOp('/v1/audio/transcriptions'),
  createTranslation: audioOp('/v1/audio/translations'),
  createImageEdit: {
    path: '/v1/images/edits',
    get upstream() {
      return openai;
    },
    base: { model: 'dalle2', prompt: 'hi', image: pngFile(), size: '1024x1024', quality: 'standard' },
    rules: {
      stored: [{ body: { response_format: 'url' }, refused: 'response_format' }],
      priority: [
        { body: { service_tier: 'priority' }, sent: (r) => expect(r.body).not.toHaveProperty('service_tier') },
      ],
      audio: 'an edit takes images and a text prompt only',
      web_search: 'an edit searches nothing',
      server_tools: 'an edit runs no tools',
      long_context: "each input image is held at the model's image_tokens (bound.ts)",
      data_residency: NO_OPENAI_SWITCH,
      cache_1h: 'OpenAI bills no cache writes',
    },
  },
  createModeration: {
    path: '/v1/moderations',
    get upstream() {
      return openai;
    },
    base: { model: 'moderate', input: 'hi' },
    rules: {
      // the contract takes text and image URLs, nothing stored
      stored: [{ body: { input: [{ type: 'file', file: { file_id: 'file-abc' } }] }, refused: null }],
      priority: 'a moderation is priced per request: OpenAI has no field that raises it',
      // an "image" whose data is audio is audio, which the model does not allow
      audio: [
        {
          body: { input: [{ type: 'image_url', image_url: { url: 'data:audio/wav;base64,UklGRg==' } }] },
          refused: null,
        },
      ],
      web_search: 'a moderation searches nothing',
      server_tools: 'a moderation takes no tools',
      long_context: NO_OPENAI_SWITCH,
      data_residency: NO_OPENAI_SWITCH,
      cache_1h: 'OpenAI bills no cache writes',
    },
  },
  createSpeech: {
    path: '/v1/audio/speech',
    get upstream() {
      return openai;
    },
    base: { model: 'tts', input: 'hi', voice: 'alloy' },
    rules: {
      stored: [{ body: { voice: { id: 'voice_1234' } }, refused: 'voice' }],
      priority: [
        { body: { service_tier: 'priority' }, sent: (r) => expect(r.body).not.toHaveProperty('service_tier') },
      ],
      audio: "audio out is what speech is: the model's own prices (characters, audio tokens) are what it costs",
      web_search: 'speech reads the text it is given: no tools',
      server_tools: 'speech reads the text it is given: no tools',
      long_context: 'the input is at most 4096 characters (the contract)',
      data_residency: NO_OPENAI_SWITCH,
      cache_1h: 'OpenAI bills no cache writes',
    },
  },
  createRerank: {
    path: '/v1/rerank',
    get upstream() {
      return openai;
    },
    base: { model: 'rank', query: 'hi', documents: ['a', 'b'] },
    rules: {
      // a document is text: the contract takes no other field of one (a stored file, an image to fetch)
      stored: [{ body: { documents: [{ text: 'a', file_id: 'file-abc' }] }, refused: null }],
      priority: 'rerank servers have no priced tier',
      audio: 'documents are text only',
      web_search: 'a rerank searches only the documents it is sent',
      server_tools: 'a rerank takes no tools',
      long_context: 'a rerank is priced per token of every (query, document) pair, however long',
      data_residency: NO_OPENAI_SWITCH,
      cache_1h: 'rerank servers bill no cache writes',
    },
  },
  createMessage: {
    path: '/v1/messages',
    get upstream() {
      return claude;
    },
    base: messagesBase,
    rules: messagesRules(),
  },
  countMessageTokens: {
    path: '/v1/messages/count_tokens',
    get upstream() {
      return claude;
    },
    base: messagesBase,
    rules: messagesRules(),
  },
  createResponse: {
    path: '/v1/responses',
    get upstream() {
      return openai;
    },
    base: { model: 'gpt', input: 'hi', max_output_tokens: 16 },
    rules: {
      stored: [
        { body: { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-abc' }] }] }, refused: null },
        { body: { input: [{ type: 'item_reference', id: 'msg_abc' }] }, refused: 'input' },
        { body: { input: [{ id: 'msg_abc' }] }, refused: 'input' },
        { body: { prompt: { id: 'pmpt_abc' } }, refused: 'prompt' },
        { body: { conversation: 'conv_abc' }, refused: 'conversation' },
      ],
      priority: [
        { body: { service_tier: 'priority' }, sent: (r) => expect(r.body).not.toHaveProperty('service_tier') },
      ],
      audio: 'the Responses API takes no audio',
      web_search: [{ body: { tools: [{ type: 'web_search' }] }, sent: (r) => expect(r.body.tools ?? []).toEqual([]) }],
      server_tools: [
        {
          body: {
            tools: [
              { type: 'file_search', vector_store_ids: ['vs_abc'] },
              { type: 'mcp', server_label: 'x', server_url: 'https://attacker.example' },
            ],
            context_management: [{ type: 'compaction' }],
          },
          sent: (r) => {
            expect(r.body.tools ?? []).toEqual([]);
            expect(r.body).not.toHaveProperty('context_management');
          },
        },
      ],
      long_context: NO_OPENAI_SWITCH,
      data_residency: NO_OPENAI_SWITCH,
      cache_1h: 'OpenAI bills no cache writes',
    },
  },
};

test('the table names every metered operation and, for each, every rule', () => {
  expect(Object.keys(OPS).sort()).toEqual(METERED.sort());
  for (const op of Object.values(OPS)) expect(Object.keys(op.rules).sort()).toEqual([...RULES].sort());
});

const cases = Object.entries(OPS).flatMap(([name, op]) =>
  RULES.flatMap((rule) =>
    typeof op.rules[rule] === 'string'
      ? []
      : (op.rules[rule] as Probe[]).map((probe, i) => [`${name} · ${rule} #${i + 1}`, op, probe] as const),
  ),
);

test.each(cases)('%s', async (_name, op, probe) => {
  const before = op.upstream.requests.length;
  const fields = { ...op.base, ...probe.body };
  const multipart = Object.values(fields).some((v) => v instanceof Blob);
  const res = await fetch(`${gw.url}${op.path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${secret}`,
      ...(!multipart && { 'content-type': 'application/json' }),
      ...probe.headers,
    },
    body: multipart ? formOf(fields) : JSON.stringify(fields),
  });
  const text = await res.text();
  if (probe.refused !== undefined) {
    expect({ status: res.status, text }).toMatchObject({ status: 400 });
    if (probe.refused) expect(JSON.parse(text).error.param).toBe(probe.refused);
    expect(op.upstream.requests.length).toBe(before); // nothing went upstream
    return;
  }
  expect({ status: res.status, text }).toMatchObject({ status: 200 });
  expect(op.upstream.requests.length).toBe(before + 1);
  const sent = op.upstream.last();
  expect(sent.path).toBe(`/v1${op.path.replace(/^\/v1/, '')}`);
  probe.sent!(sent);
});

/** Fields as a multipart form: Blobs as files, anything else as text. */
function formOf(fields: Record<string, unknown>): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (v instanceof Blob) f.set(k, v, `${k}.bin`);
    else f.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  return f;
}
