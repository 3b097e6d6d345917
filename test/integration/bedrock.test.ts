/**
 * The bedrock provider end to end: the official openai (and plain fetch for /v1/messages) → the gateway → a fake
 * Bedrock Runtime on loopback that checks every SigV4 signature with another implementation (aws4).
 * Runs on the database in DATABASE_URL (SQLite by default, MariaDB in `make test`'s second pass).
 */
import OpenAI from 'openai';
import pino from 'pino';
import {
  FakeBedrock,
  KEYS,
  REGION,
  TEMP_KEYS,
  anthropicFrames,
  bedrockError,
  claudeMessage,
  converseAnswer,
  converseUsage,
  eventFrame,
  exceptionFrame,
  fakeVector,
  framesPlan,
  textFrames,
  throttled,
} from '../fakes/bedrockUpstream';
import { streamEvents } from '../fakes/anthropicUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { Price } from '../../src/billing/prices';
import { usage } from '../../src/usage';
import { countText } from '../../src/gateway/tokenizer/count';

const CLAUDE = 'us.anthropic.claude-3-7-sonnet-20250219-v1:0';
const HAIKU = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const WRONG_SECRET = 'wrong/Secret+Access/Key0123456789abcdefXYZ';
const SECRETS = [KEYS.secretAccessKey, TEMP_KEYS.secretAccessKey, TEMP_KEYS.sessionToken!, WRONG_SECRET];

let upstream: FakeBedrock;
let gw: TestGateway;
let client: OpenAI;
let apiKey: string;
const lines: any[] = [];

// USD per million tokens as configured for `claude`; cache prices from the provider's multipliers.
const PRICE = new Price({
  input: 3_000_000,
  output: 15_000_000,
  cached_input: 300_000,
  cache_write: 3_750_000,
  cache_write_1h: 6_000_000,
});

const config = (url: string) => `
routing: { breaker_failures: 1000 }
limits: { rpm: 0, tpm: 0 }
billing: { min_output_tokens: 16 }
providers:
  br:
    type: bedrock
    region: ${REGION}
    base_url: "${url}"
    access_key_id: "\${AWS_KEY_ID}"
    secret_access_key: "\${AWS_SECRET}"
  badsecret: { type: bedrock, region: ${REGION}, base_url: "${url}", access_key_id: "${KEYS.accessKeyId}", secret_access_key: "${WRONG_SECRET}" }
  expired:
    type: bedrock
    region: ${REGION}
    base_url: "${url}"
    access_key_id: "${TEMP_KEYS.accessKeyId}"
    secret_access_key: "${TEMP_KEYS.secretAccessKey}"
    session_token: "${TEMP_KEYS.sessionToken}"
models:
  - { id: claude, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: br, model: "${CLAUDE}" } ] }
  - id: claude-fallback
    kind: chat
    price: { input: 3, output: 15 }
    routes: [ { provider: br, model: "${HAIKU}" }, { provider: br, model: "${CLAUDE}" } ]
  - { id: llama, kind: chat, routes: [ { provider: br, model: "meta.llama3-1-70b-instruct-v1:0" } ] }
  - { id: titan, kind: embedding, price: { input: 0.02 }, routes: [ { provider: br, model: "amazon.titan-embed-text-v2:0" } ] }
  - { id: cohere, kind: embedding, routes: [ { provider: br, model: "cohere.embed-english-v3" } ] }
  - { id: claude-badsecret, kind: chat, routes: [ { provider: badsecret, model: "${CLAUDE}" } ] }
  - { id: claude-expired, kind: chat, routes: [ { provider: expired, model: "${CLAUDE}" } ] }
`;

beforeAll(async () => {
  upstream = await new FakeBedrock().start();
  gw = await startGateway(config(upstream.url), {
    ...process.env,
    AWS_KEY_ID: KEYS.accessKeyId,
    AWS_SECRET: KEYS.secretAccessKey,
  });
  gw.app.log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  apiKey = (await gw.newKey()).secret;
  client = new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

beforeEach(() => {
  upstream.plans.length = 0;
});

async function collect(stream: AsyncIterable<OpenAI.Chat.ChatCompletionChunk>) {
  const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

const text = (chunks: OpenAI.Chat.ChatCompletionChunk[]) =>
  chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

const conversepath = (model: string, action: string) => `/model/${encodeURIComponent(model)}/${action}`;

describe('chat through Converse', () => {
  test('non-streaming: signed, the model id escaped into the path, translated both ways', async () => {
    const res = await client.chat.completions.create({
      model: 'claude',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi!' },
        { role: 'user', content: 'how are' },
        { role: 'user', content: [{ type: 'text', text: ' you' }] },
      ],
      temperature: 1.5,
      top_p: 0.9,
      max_completion_tokens: 100,
      stop: ['END'],
    });
    expect(res).toMatchObject({
      object: 'chat.completion',
      model: 'claude',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Echo: how are you', refusal: null },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
    });
    expect(res.id).toMatch(/^chatcmpl-/);
    const sent = upstream.last();
    expect(sent.path).toBe('/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse');
    expect(sent.headers.authorization).toMatch(
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${KEYS.accessKeyId}/\\d{8}/${REGION}/bedrock/aws4_request, `),
    );
    expect(sent.headers['x-amz-security-token']).toBeUndefined();
    expect(JSON.stringify(sent.headers)).not.toContain(KEYS.secretAccessKey);
    expect(sent.body).toEqual({
      system: [{ text: 'You are terse.' }, { text: 'Answer in English.' }],
      messages: [
        { role: 'user', content: [{ text: 'hello' }] },
        { role: 'assistant', content: [{ text: 'hi!' }] },
        { role: 'user', content: [{ text: 'how are' }, { text: ' you' }] },
      ],
      inferenceConfig: { maxTokens: 100, stopSequences: ['END'], temperature: 1, topP: 0.9 },
    });
  });

  test('streaming: frames cut mid-chunk are reassembled; role first, text, finish; usage with cache reads and writes when asked', async () => {
    const usageIn = converseUsage(1_000, 3, { cacheReadInputTokens: 2_000, cacheWriteInputTokens: 400 });
    upstream.plan(framesPlan(textFrames(['One', ' two', ' three'], 'end_turn', usageIn)));
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'claude',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(upstream.last().path).toBe(conversepath(CLAUDE, 'converse-stream'));
    expect(chunks[0].choices[0]).toMatchObject({ delta: { role: 'assistant', content: '' }, finish_reason: null });
    expect(text(chunks)).toBe('One two three');
    const finishes = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean);
    expect(finishes).toEqual(['stop']);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[chunks.length - 1]).toMatchObject({
      choices: [],
      usage: {
        prompt_tokens: 3_400,
        completion_tokens: 3,
        total_tokens: 3_403,
        prompt_tokens_details: { cached_tokens: 2_000 }, // writes are billed apart (next test), not shown
      },
    });
  });

  test('usage with cache reads and writes is billed at their prices, to the micro-dollar', async () => {
    const k = await gw.newKey();
    const c = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const reported = converseUsage(1_000, 100, { cacheReadInputTokens: 2_000, cacheWriteInputTokens: 400 });
    upstream.plan({ kind: 'json', body: converseAnswer([{ text: 'ok' }], 'end_turn', reported) });
    const res = await c.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] });
    expect(res.usage).toMatchObject({
      prompt_tokens: 3_400,
      completion_tokens: 100,
      prompt_tokens_details: { cached_tokens: 2_000 },
    });
    await gw.settled();
    const rows = await gw.app.db('ledger').where({ account_id: k.accountId, kind: 'usage' });
    const expected = PRICE.cost(usage(3_400, 100, { cached: 2_000, cacheWrite: 400 }));
    expect(expected).toBe(3_000 + 600 + 1_500 + 1_500);
    expect(rows.map((r) => -Number(r.amount_micros))).toEqual([expected]);
  });

  test('a legacy completion and /v1/messages on a model that is not Claude go through Converse', async () => {
    const res = await client.completions.create({ model: 'llama', prompt: 'Say hi', max_tokens: 20 });
    expect(res.choices[0].text).toBe('Echo: Say hi');
    expect(upstream.last().path).toBe(conversepath('meta.llama3-1-70b-instruct-v1:0', 'converse'));
    const m = await messages({ model: 'llama', max_tokens: 50, messages: [{ role: 'user', content: 'hey' }] });
    expect(m.status).toBe(200);
    expect(m.json).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'Echo: hey' }] });
    expect(upstream.last().path).toBe(conversepath('meta.llama3-1-70b-instruct-v1:0', 'converse'));
  });
});

async function messages(body: object, headers: Record<string, string> = {}, key = apiKey) {
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: JSON.stringify(body),
  });
  const raw = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(raw);
  } catch {
    json = null;
  }
  return { status: res.status, json, raw };
}

describe('tools, images and documents', () => {
  const tools: OpenAI.Chat.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather now',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
    { type: 'function', function: { name: 'get_time' } },
  ];

  test('two tool calls in one streamed answer, reassembled by the SDK; then the results sent back as toolResult', async () => {
    upstream.plan(
      framesPlan([
        eventFrame('messageStart', { role: 'assistant' }),
        eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Let me check.' } }),
        eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
        eventFrame('contentBlockStart', {
          contentBlockIndex: 1,
          start: { toolUse: { toolUseId: 'tooluse_A1', name: 'get_weather' } },
        }),
        eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":' } } }),
        eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: ' "Paris"}' } } }),
        eventFrame('contentBlockStop', { contentBlockIndex: 1 }),
        eventFrame('contentBlockStart', {
          contentBlockIndex: 2,
          start: { toolUse: { toolUseId: 'tooluse_B2', name: 'get_time' } },
        }),
        eventFrame('contentBlockStop', { contentBlockIndex: 2 }),
        eventFrame('messageStop', { stopReason: 'tool_use' }),
        eventFrame('metadata', { usage: converseUsage(30, 12) }),
      ]),
    );
    const runner = client.chat.completions.stream({
      model: 'claude',
      messages: [{ role: 'user', content: 'weather and time in Paris?' }],
      tools,
      tool_choice: 'auto',
    });
    const final = await runner.finalChatCompletion();
    expect(upstream.last().body.toolConfig).toEqual({
      tools: [
        {
          toolSpec: {
            name: 'get_weather',
            description: 'Weather now',
            inputSchema: {
              json: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
            },
          },
        },
        { toolSpec: { name: 'get_time', inputSchema: { json: { type: 'object', properties: {} } } } },
      ],
      toolChoice: { auto: {} },
    });
    const message = final.choices[0].message;
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(message.content).toBe('Let me check.');
    expect(message.tool_calls).toEqual([
      { id: 'tooluse_A1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
      { id: 'tooluse_B2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
    ]);

    await client.chat.completions.create({
      model: 'claude',
      messages: [
        { role: 'user', content: 'weather and time in Paris?' },
        { role: 'assistant', content: message.content, tool_calls: message.tool_calls },
        { role: 'tool', tool_call_id: 'tooluse_B2', content: 'noon' },
        { role: 'tool', tool_call_id: 'tooluse_A1', content: '{"temp_c":21}' },
      ],
      tools,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    const sent = upstream.last().body;
    expect(sent.messages).toEqual([
      { role: 'user', content: [{ text: 'weather and time in Paris?' }] },
      {
        role: 'assistant',
        content: [
          { text: 'Let me check.' },
          { toolUse: { toolUseId: 'tooluse_A1', name: 'get_weather', input: { city: 'Paris' } } },
          { toolUse: { toolUseId: 'tooluse_B2', name: 'get_time', input: {} } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'tooluse_B2', content: [{ text: 'noon' }] } },
          { toolResult: { toolUseId: 'tooluse_A1', content: [{ text: '{"temp_c":21}' }] } },
        ],
      },
    ]);
    expect(sent.toolConfig.toolChoice).toEqual({ tool: { name: 'get_time' } });
  });

  test('non-streaming tool calls: content null, finish tool_calls; required → any', async () => {
    upstream.plan({
      kind: 'json',
      body: converseAnswer([{ toolUse: { toolUseId: 't1', name: 'get_time', input: { tz: 'UTC' } } }], 'tool_use'),
    });
    const res = await client.chat.completions.create({
      model: 'claude',
      messages: [{ role: 'user', content: 'time?' }],
      tools,
      tool_choice: 'required',
    });
    expect(upstream.last().body.toolConfig.toolChoice).toEqual({ any: {} });
    expect(res.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        content: null,
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } }],
      },
    });
  });

  test('images and documents go as bytes with their format; a web URL is a 400 before anything is sent', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    await client.chat.completions.create({
      model: 'claude',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
            {
              type: 'file',
              file: { filename: 'Q3 report (final).pdf', file_data: 'data:application/pdf;base64,JVBERi0x' },
            },
          ],
        },
      ],
    });
    expect(upstream.last().body.messages[0].content).toEqual([
      { text: 'what is this?' },
      { image: { format: 'png', source: { bytes: png } } },
      { document: { format: 'pdf', name: 'Q3 report (final)', source: { bytes: 'JVBERi0x' } } },
    ]);
    const before = upstream.requests.length;
    const e = await client.chat.completions
      .create({
        model: 'claude',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }],
      })
      .catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain('only data URLs');
    expect(upstream.requests.length).toBe(before);
  });
});

describe('finish reasons', () => {
  test.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['guardrail_intervened', 'content_filter'],
    ['content_filtered', 'content_filter'],
  ])('%s → %s, whole and streamed', async (stopReason, expected) => {
    upstream.plan(
      { kind: 'json', body: converseAnswer([{ text: 'x' }], stopReason) },
      framesPlan(textFrames(['x'], stopReason)),
    );
    const res = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] });
    expect(res.choices[0].finish_reason).toBe(expected);
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'claude',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      }),
    );
    expect(chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean)).toEqual([expected]);
  });
});
