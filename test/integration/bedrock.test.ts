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
  envchain: { type: bedrock, region: ${REGION}, base_url: "${url}" }
  nochain: { type: bedrock, region: ${REGION}, base_url: "${url}" }
models:
  - { id: claude-envchain, kind: chat, routes: [ { provider: envchain, model: "${CLAUDE}" } ] }
  - { id: claude-nochain, kind: chat, routes: [ { provider: nochain, model: "${CLAUDE}" } ] }
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

test('/v1/responses goes through chat to Converse', async () => {
  const res = await client.responses.create({ model: 'claude', input: 'hello there', max_output_tokens: 64 });
  expect(res.output_text).toBe('Echo: hello there');
  expect(upstream.last().path).toBe(conversepath(CLAUDE, 'converse'));
  expect(upstream.last().body.inferenceConfig.maxTokens).toBe(64);
});

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

describe('errors and fallback', () => {
  const ask = (model = 'claude', stream = false) =>
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], stream }).catch((e) => e);

  test('ThrottlingException is a 429 upstream_rate_limited; with a second route, the next route answers', async () => {
    upstream.plan(throttled());
    const e = await ask();
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e.error).toMatchObject({ code: 'upstream_rate_limited' });

    upstream.plan(throttled());
    const before = upstream.requests.length;
    const res = await client.chat.completions.create({
      model: 'claude-fallback',
      messages: [{ role: 'user', content: 'again' }],
    });
    expect(res.choices[0].message.content).toBe('Echo: again');
    expect(upstream.requests.slice(before).map((r) => r.path)).toEqual([
      conversepath(HAIKU, 'converse'),
      conversepath(CLAUDE, 'converse'),
    ]);
  });

  test('a throttlingException as the first frame of a stream falls back too', async () => {
    upstream.plan(framesPlan([exceptionFrame('throttlingException', 'Too many tokens, please wait.')]));
    const before = upstream.requests.length;
    const chunks = await collect((await ask('claude-fallback', true)) as any);
    expect(text(chunks)).toBe('Echo: x');
    expect(upstream.requests.length).toBe(before + 2);
  });

  test("ValidationException is a 400 with Bedrock's message, streaming or not", async () => {
    const message = 'The model returned the following errors: messages: roles must alternate';
    upstream.plan(bedrockError(400, 'ValidationException', message), bedrockError(400, 'ValidationException', message));
    let e = await ask();
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain(message);
    e = await ask('claude', true);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain(message);
  });

  test('InternalServerException, ServiceUnavailableException and a reset are 502s', async () => {
    upstream.plan(
      bedrockError(500, 'InternalServerException', 'Internal error'),
      bedrockError(503, 'ServiceUnavailableException', 'Service unavailable'),
      { kind: 'reset' },
    );
    for (let i = 0; i < 3; i++) {
      const e = await ask();
      expect(e.status).toBe(502);
      expect(e.error).toMatchObject({ type: 'upstream_error', code: 'upstream_unavailable' });
    }
  });

  test('an exception mid-stream: the text before it was delivered, then the SDK raises', async () => {
    upstream.plan(
      framesPlan([
        eventFrame('messageStart', { role: 'assistant' }),
        eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'partial' } }),
        exceptionFrame('modelStreamErrorException', 'The model stream failed'),
      ]),
    );
    const stream = (await ask('claude', true)) as AsyncIterable<OpenAI.Chat.ChatCompletionChunk>;
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const c of stream) got.push(c.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow(/upstream/i);
    expect(got.join('')).toBe('partial');
  });

  test('a stream that ends before its usage, or in the middle of a frame, is an error', async () => {
    const frames = textFrames(['cut']);
    const last = frames[frames.length - 1];
    const head = Buffer.concat(frames.slice(0, -1));
    for (const plan of [
      framesPlan(frames.slice(0, -1)),
      // the metadata frame's first bytes, then the end
      { kind: 'bytes' as const, type: 'application/vnd.amazon.eventstream', pieces: [head, last.subarray(0, 9)] },
    ]) {
      upstream.plan(plan);
      const stream = (await ask('claude', true)) as AsyncIterable<OpenAI.Chat.ChatCompletionChunk>;
      await expect(
        (async () => {
          for await (const _ of stream);
        })(),
      ).rejects.toThrow(/upstream/i);
    }
  });
});

describe('credentials AWS refuses', () => {
  test.each([
    ['a wrong secret key', 'claude-badsecret', 'InvalidSignatureException', 'secret_access_key'],
    ['an expired session token', 'claude-expired', 'ExpiredTokenException', 'session_token'],
  ])(
    "%s: a 502 in the caller's shape, the log line names the credential, no secret anywhere",
    async (_name, model, type, setting) => {
      lines.length = 0;
      const e = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'x' }] })
        .catch((x) => x);
      expect(e.status).toBe(502);
      expect(e.error).toMatchObject({ type: 'upstream_error', code: 'upstream_unavailable' });
      const m = await messages({ model, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] });
      expect(m.status).toBe(502);
      expect(m.json).toMatchObject({ type: 'error', error: { type: 'api_error' } });
      const logged = lines.filter((l) => l.upstream);
      expect(logged).toHaveLength(2);
      for (const l of logged) {
        expect(l.upstream).toContain(type);
        expect(l.upstream).toContain(setting);
      }
      const everything = JSON.stringify([e.error, m.raw, lines]);
      for (const s of SECRETS) expect(everything).not.toContain(s);
      expect(everything).not.toContain(KEYS.accessKeyId);
    },
  );

  describe("without keys: AWS's default credential chain", () => {
    const AWS_VARS = [
      'AWS_ACCESS_KEY_ID',
      'AWS_SECRET_ACCESS_KEY',
      'AWS_SESSION_TOKEN',
      'AWS_PROFILE',
      'AWS_SHARED_CREDENTIALS_FILE',
      'AWS_CONFIG_FILE',
      'AWS_EC2_METADATA_DISABLED',
      'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
      'AWS_CONTAINER_CREDENTIALS_FULL_URI',
      'AWS_WEB_IDENTITY_TOKEN_FILE',
    ];
    const saved = Object.fromEntries(AWS_VARS.map((k) => [k, process.env[k]]));
    beforeEach(() => {
      for (const k of AWS_VARS) delete process.env[k];
      // nowhere else to look: no profile files, no instance metadata service
      process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/credentials';
      process.env.AWS_CONFIG_FILE = '/nonexistent/config';
      process.env.AWS_EC2_METADATA_DISABLED = 'true';
    });
    afterAll(() => {
      for (const k of AWS_VARS)
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
    });

    test('the environment variables sign the request', async () => {
      process.env.AWS_ACCESS_KEY_ID = KEYS.accessKeyId;
      process.env.AWS_SECRET_ACCESS_KEY = KEYS.secretAccessKey;
      const res = await client.chat.completions.create({
        model: 'claude-envchain',
        messages: [{ role: 'user', content: 'from env' }],
      });
      expect(res.choices[0].message.content).toBe('Echo: from env');
      expect(upstream.last().headers.authorization).toContain(`Credential=${KEYS.accessKeyId}/`);
    });

    test('no credentials anywhere: a 502, and the log line says where they were looked for', async () => {
      lines.length = 0;
      const before = upstream.requests.length;
      const e = await client.chat.completions
        .create({ model: 'claude-nochain', messages: [{ role: 'user', content: 'x' }] })
        .catch((x) => x);
      expect(e.status).toBe(502);
      expect(e.error).toMatchObject({ type: 'upstream_error' });
      expect(upstream.requests.length).toBe(before);
      expect(lines.find((l) => l.upstream)?.upstream).toContain('no AWS credentials from the default chain');
    });
  });

  test('no credential appears in /metrics', async () => {
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toContain('switchyard_');
    for (const s of [...SECRETS, KEYS.accessKeyId, TEMP_KEYS.accessKeyId]) expect(metrics).not.toContain(s);
  });
});

describe('/v1/messages natively on Claude (InvokeModel)', () => {
  test('the body as Bedrock takes it: anthropic_version, betas in anthropic_beta, no model or stream', async () => {
    const res = await messages(
      {
        model: 'claude',
        max_tokens: 100,
        system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: 'hello' }],
      },
      { 'anthropic-beta': 'interleaved-thinking-2025-05-14' },
    );
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude',
      content: [{ type: 'text', text: 'Echo: hello' }],
      usage: { input_tokens: 10, output_tokens: 5 },
    });
    expect(res.json['amazon-bedrock-invocationMetrics']).toBeUndefined();
    const sent = upstream.last();
    expect(sent.path).toBe(conversepath(CLAUDE, 'invoke'));
    expect(sent.headers['anthropic-beta']).toBeUndefined();
    expect(sent.body).toEqual({
      anthropic_version: 'bedrock-2023-05-31',
      anthropic_beta: ['interleaved-thinking-2025-05-14'],
      max_tokens: 100,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'hello' }],
    });
  });

  test("streamed: Anthropic's events as they came inside the event stream, usage included", async () => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude',
        max_tokens: 50,
        stream: true,
        messages: [{ role: 'user', content: 'a b' }],
      }),
    });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(upstream.last().path).toBe(conversepath(CLAUDE, 'invoke-with-response-stream'));
    const events = body
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(events[0]).toMatchObject({ type: 'message_start', message: { model: 'claude' } });
    expect(events[events.length - 1]).toEqual({ type: 'message_stop' });
    const textOut = events
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => e.delta.text)
      .join('');
    expect(textOut).toBe('Echo: a b');
  });

  test("a ThrottlingException on InvokeModel is a 429 in Anthropic's shape", async () => {
    upstream.plan(throttled());
    const res = await messages({ model: 'claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] });
    expect(res.status).toBe(429);
    expect(res.json).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
  });
});

describe('embeddings (InvokeModel)', () => {
  test('Titan Text Embeddings v2: one text, dimensions, its token count as usage', async () => {
    const res = await client.embeddings.create({
      model: 'titan',
      input: 'hello big world',
      dimensions: 3,
      encoding_format: 'float',
    });
    expect(upstream.last().path).toBe(conversepath('amazon.titan-embed-text-v2:0', 'invoke'));
    expect(upstream.last().body).toEqual({ inputText: 'hello big world', dimensions: 3, normalize: true });
    expect(res).toEqual({
      object: 'list',
      model: 'titan',
      data: [{ object: 'embedding', index: 0, embedding: fakeVector('hello big world', 3) }],
      usage: { prompt_tokens: 3, total_tokens: 3 },
    });
    const e = await client.embeddings.create({ model: 'titan', input: ['a', 'b'] }).catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain('one input per request');
  });

  test('Cohere Embed: a list in one call, floats back in order (base64 for the SDK default)', async () => {
    const res = await client.embeddings.create({ model: 'cohere', input: ['a', 'bb', 'ccc'] });
    expect(upstream.last().body).toEqual({ texts: ['a', 'bb', 'ccc'], input_type: 'search_document' });
    expect(res.data.map((d) => d.index)).toEqual([0, 1, 2]);
    res.data.forEach((d, i) =>
      d.embedding.forEach((x, j) => expect(x).toBeCloseTo(fakeVector(['a', 'bb', 'ccc'][i])[j], 6)),
    );
    expect(res.usage.prompt_tokens).toBeGreaterThan(0); // counted by the gateway: Cohere on Bedrock reports none
  });
});

describe('money', () => {
  /** Streams `body` to `path`, leaves once `marker` went by, and returns the request's usage record. */
  async function cut(path: string, body: object, marker: string) {
    const k = await gw.newKey();
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    const reader = res.body!.getReader();
    let got = '';
    while (!got.includes(marker)) got += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    for (let i = 0; i < 100; i++) {
      await gw.settled();
      const record = await gw.app.db('usage_records').where('account_id', k.accountId).first();
      if (record) return record;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('no usage record');
  }

  test('a Converse stream cut before its usage is billed what it sent, reasoning included, counted', async () => {
    upstream.plan(
      framesPlan(
        [
          eventFrame('messageStart', { role: 'assistant' }),
          eventFrame('contentBlockDelta', {
            contentBlockIndex: 0,
            delta: { reasoningContent: { text: 'The user greets me; I should greet them back warmly.' } },
          }),
          eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
          eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'Hello there, ' } }),
          eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'friend' } }),
        ],
        { stall: true },
      ),
    );
    const record = await cut(
      '/v1/chat/completions',
      { model: 'claude', messages: [{ role: 'user', content: 'hi' }] },
      'friend',
    );
    expect(record).toMatchObject({ status: 499, counted: 'tokenizer' });
    expect(Number(record.completion_tokens)).toBe(
      countText('The user greets me; I should greet them back warmly.Hello there, friend'),
    );
  });

  test('a native Messages stream cut short: the prompt as Claude counted it in message_start', async () => {
    const msg = claudeMessage([{ type: 'text', text: 'Hello there' }], CLAUDE, {
      input_tokens: 5_000,
      output_tokens: 9,
      cache_read_input_tokens: 2_000,
    });
    upstream.plan(framesPlan(anthropicFrames(streamEvents(msg).slice(0, 4)), { stall: true }));
    const record = await cut(
      '/v1/messages',
      { model: 'claude', max_tokens: 1_000, messages: [{ role: 'user', content: 'hi' }] },
      'Hello',
    );
    expect(record).toMatchObject({ status: 499, prompt_tokens: 7_000, cached_tokens: 2_000 });
  });

  test('the hold covers the bill: a small balance lowers maxTokens, and what Bedrock bills is charged, no shortfall', async () => {
    const BUDGET = 20_000;
    const k = await gw.newKey({}, BUDGET);
    let billed = 0;
    upstream.plan({
      kind: 'answer',
      with: (r) => {
        // Bedrock bills the prompt it read and, at worst, every output token it was allowed.
        const input = Math.ceil(Buffer.byteLength(JSON.stringify(r.body.messages)) / 4);
        const output = r.body.inferenceConfig.maxTokens;
        billed = PRICE.cost(usage(input, output));
        return { kind: 'json', body: converseAnswer([{ text: 'ok' }], 'max_tokens', converseUsage(input, output)) };
      },
    });
    const c = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await c.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'write a long story' }] });
    await gw.settled();
    expect(upstream.last().body.inferenceConfig.maxTokens).toBeLessThan(4096);
    const rows = await gw.app.db('ledger').where('account_id', k.accountId);
    const charged = -rows.filter((r) => r.kind === 'usage').reduce((n, r) => n + Number(r.amount_micros), 0);
    expect(billed).toBeGreaterThan(0);
    expect(charged).toBe(billed);
    expect(charged).toBeLessThanOrEqual(BUDGET);
    expect(rows.filter((r) => r.kind === 'shortfall')).toHaveLength(0);
  });
});
