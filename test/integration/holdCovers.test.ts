/**
 * The hold covers the bill, under attack. A key holding 0.02 USD tries to make the operator pay: on every paid
 * endpoint and every provider type it sends what an upstream bills beyond the tokens the gateway counted (inline
 * video, server tools, MCP servers, stored prompts and conversations, compaction, pricier tiers...). The fake
 * upstreams on loopback bill each request the way the provider documents it (usage counted from what they were
 * sent), and record it; the test compares that bill, at the configured prices, with what the account was charged.
 * Every attack must end either refused before anything is sent, or charged the whole bill: never a shortfall.
 * On the database in DATABASE_URL (SQLite by default, MariaDB in the second pass).
 */
import { API_KEY, FakeAnthropic, message, streamEvents } from '../fakes/anthropicUpstream';
import type { Received } from '../fakes/fakeUpstream';
import { AZURE_KEY, FakeAzure } from '../fakes/azureUpstream';
import { FakeGemini, geminiResponse, usageOf } from '../fakes/geminiUpstream';
import { FakeOpenAI, responseFrame, responseObject } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { Price } from '../../src/billing/prices';
import { inspect, promptBound } from '../../src/gateway/bound';
import { countText } from '../../src/gateway/tokenizer/count';

let openai: FakeOpenAI;
let claude: FakeAnthropic;
let gemini: FakeGemini;
let azure: FakeAzure;
let gw: TestGateway;

/** What each upstream billed, in tokens, as the provider would for what it was sent. */
const bills: { model: string; input: number; output: number }[] = [];

// USD per million tokens, as configured below; in micro-USD per million tokens for Price.
const PRICES: Record<string, Price> = {
  gpt: new Price({
    input: 1_000_000,
    output: 4_000_000,
    cached_input: 1_000_000,
    cache_write: 1_000_000,
    cache_write_1h: 1_000_000,
  }),
  // no cache prices configured: Anthropic's multipliers (reads 0.1×, 5-minute writes 1.25×; 1-hour writes not allowed)
  claude: new Price(
    { input: 3_000_000, output: 15_000_000, cached_input: 300_000, cache_write: 3_750_000, cache_write_1h: 6_000_000 },
    false,
  ),
  gem: new Price({
    input: 300_000,
    output: 2_500_000,
    cached_input: 300_000,
    cache_write: 300_000,
    cache_write_1h: 300_000,
  }),
};
PRICES['claude-all'] = new Price(PRICES.claude.p, true);
PRICES['gpt-all'] = PRICES.gpt;
PRICES['gpt4o-prod'] = PRICES.gpt;
PRICES.r1 = new Price({
  input: 550_000,
  output: 2_190_000,
  cached_input: 550_000,
  cache_write: 550_000,
  cache_write_1h: 550_000,
});

beforeAll(async () => {
  openai = await new FakeOpenAI().start();
  claude = await new FakeAnthropic().start();
  gemini = await new FakeGemini().start();
  azure = await new FakeAzure().start();
  gw = await startGateway(
    `
billing: { min_output_tokens: 16 }
limits: { rpm: 0, tpm: 0 }
routing: { breaker_failures: 1000 }
providers:
  oa: { type: openai, base_url: "${openai.url}" }
  an: { type: anthropic, base_url: "${claude.url}", api_key: "\${FAKE_ANTHROPIC_KEY}" }
  ge: { type: gemini, base_url: "${gemini.url}" }
  az: { type: azure, base_url: "${azure.url}", api_key: "${AZURE_KEY}" }
models:
  - { id: r1, kind: chat, price: { input: 0.55, output: 2.19 }, extra_output_tokens: 8000, routes: [ { provider: oa, model: r1 } ] }
  - { id: r1-unset, kind: chat, price: { input: 0.55, output: 2.19 }, routes: [ { provider: oa, model: r1 } ] }
  - { id: azgpt, kind: chat, price: { input: 1, output: 4 }, routes: [ { provider: az, model: gpt4o-prod } ] }
  - { id: gpt, kind: chat, price: { input: 1, output: 4 }, routes: [ { provider: oa } ] }
  - { id: claude, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: an } ] }
  - { id: gem, kind: chat, price: { input: 0.3, output: 2.5 }, routes: [ { provider: ge } ] }
  - { id: claude-all, kind: chat, price: { input: 3, output: 15 }, allow: [priority, server_tools, long_context, data_residency, cache_1h], routes: [ { provider: an } ] }
  - { id: gpt-all, kind: chat, price: { input: 1, output: 4 }, allow: [priority, server_tools], routes: [ { provider: oa } ] }
`,
    { ...process.env, FAKE_ANTHROPIC_KEY: API_KEY },
  );
});

afterAll(async () => {
  await gw?.close();
  await openai?.close();
  await claude?.close();
  await gemini?.close();
  await azure?.close();
});

beforeEach(() => {
  // Every answer below is billed the way its provider bills what it was sent.
  openai.plans.length = claude.plans.length = gemini.plans.length = 0;
});

// ---------------------------------------------------------------------------------------------------------------
// Upstreams that bill like the provider

/** Text as a provider's tokenizer reads it: about a token per four bytes (the bill the tests compare is far larger). */
const textTokens = (v: unknown) => Math.ceil(Buffer.byteLength(JSON.stringify(v ?? '')) / 4);

/** Base64 data → its bytes. */
const raw = (b64: string) => Math.floor((b64.length * 3) / 4);

/**
 * Anthropic's bill for a Messages request: the text; the tool-use system prompt (346 tokens) and the documented
 * overhead of its own client tools (computer use 735 + a 499-token system prompt, bash 245, text editor 700); what
 * server tools and connectors read back into the context (a code run's output, an MCP server's tool results, a
 * skill's files) ; max_tokens of output; and, with compaction, the summarising pass as an iteration of its own that
 * the top-level usage leaves out.
 */
function anthropicAnswer(r: Received) {
  const b = r.body;
  const tools: { type?: string }[] = b.tools ?? [];
  let input = textTokens({ system: b.system, messages: b.messages, tools });
  if (tools.length) input += 346;
  for (const t of tools) {
    const type = t.type ?? 'custom';
    if (type.startsWith('computer_')) input += 735 + 499;
    if (type.startsWith('bash_')) input += 245;
    if (type.startsWith('text_editor_')) input += 700;
    if (type.startsWith('code_execution_') || type.startsWith('web_fetch_')) input += 100_000;
  }
  if (b.mcp_servers?.length) input += 100_000;
  if (b.container?.skills?.length) input += 50_000;
  const output = b.max_tokens;
  const compacting = (b.context_management?.edits ?? []).some((e: { type: string }) => e.type.startsWith('compact'));
  if (!compacting) {
    bills.push({ model: r.body.model, input, output });
    return message([{ type: 'text', text: 'ok' }], {
      model: b.model,
      usage: { input_tokens: input, output_tokens: output },
    });
  }
  // the summary of the whole conversation is written first (3,000 tokens), then the answer reads the summary
  const iterations = [
    { type: 'compaction', input_tokens: input, output_tokens: 3_000 },
    { type: 'message', input_tokens: 3_000, output_tokens: output },
  ];
  bills.push({ model: r.body.model, input: input + 3_000, output: 3_000 + output });
  const msg = message([{ type: 'text', text: 'ok' }], {
    model: b.model,
    usage: { input_tokens: 3_000, output_tokens: output },
  });
  return { ...msg, usage: { ...msg.usage, iterations } };
}

/**
 * Gemini's bill: text at about four bytes a token; inline media by what it is: an image 258 tokens, video 263 tokens
 * a second (here a 20 kbit/s video), audio 32 tokens a second (an 8 kbit/s recording), a PDF 258 tokens a page
 * (3 kB a page); maxOutputTokens of output, per candidate.
 */
function geminiAnswer(r: Received) {
  const b = r.body;
  let input = 0;
  for (const c of [...(b.contents ?? []), b.systemInstruction ?? { parts: [] }]) {
    for (const p of c.parts ?? []) {
      if (p.text) input += textTokens(p.text);
      const m = p.inlineData;
      if (!m) continue;
      const bytes = raw(m.data);
      if (m.mimeType.startsWith('image/')) input += 258;
      else if (m.mimeType.startsWith('video/')) input += 263 * Math.ceil(bytes / 2_500);
      else if (m.mimeType.startsWith('audio/')) input += 32 * Math.ceil(bytes / 1_000);
      else input += 258 * Math.ceil(bytes / 3_000);
    }
  }
  const output = (b.generationConfig?.maxOutputTokens ?? 65_536) * (b.generationConfig?.candidateCount ?? 1);
  bills.push({ model: 'gem', input, output });
  return geminiResponse([{ text: 'ok' }], 'STOP', usageOf(input, output));
}

/**
 * OpenAI's bill for a Responses request: the text, plus what the request points at in the operator's OpenAI
 * account — a stored prompt, a conversation, referenced items — and max_output_tokens of output. In the background
 * the answer comes later (the request only gets `queued`), billed all the same.
 */
function responsesAnswer(r: Received) {
  const b = r.body;
  let input = textTokens({ instructions: b.instructions, input: b.input, tools: b.tools });
  if (b.prompt) input += 50_000;
  if (b.conversation) input += 80_000;
  for (const item of Array.isArray(b.input) ? b.input : []) if (item.type === 'item_reference') input += 60_000;
  const output = b.max_output_tokens;
  bills.push({ model: b.model, input, output });
  const usage = {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
  const res = responseObject(b, 'ok', usage);
  return b.background ? { ...res, status: 'queued', output: [], usage: null } : res;
}

/**
 * Azure OpenAI's bill for a chat request: the text, plus — "on your data" — the documents its search retrieved and
 * put into the prompt (here 20 of 5,000 tokens); max_completion_tokens of output.
 */
function azureAnswer(r: Received) {
  const b = r.body;
  let input = textTokens(b.messages) + textTokens(b.tools);
  if (b.data_sources?.length) input += 20 * 5_000;
  const output = b.max_completion_tokens;
  bills.push({ model: 'gpt4o-prod', input, output });
  return {
    id: 'chatcmpl-az',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output },
  };
}

/** The next answer of each fake upstream is billed as its provider bills what it was sent. */
function billLikeProviders() {
  openai.plans.length = claude.plans.length = gemini.plans.length = azure.plans.length = 0;
  azure.plan({ kind: 'answer', with: (r) => ({ kind: 'json', body: azureAnswer(r) }) });
  openai.plan({ kind: 'answer', with: (r) => ({ kind: 'json', body: responsesAnswer(r) }) });
  claude.plan({ kind: 'answer', with: (r) => ({ kind: 'json', body: anthropicAnswer(r) }) });
  gemini.plan({ kind: 'answer', with: (r) => ({ kind: 'json', body: geminiAnswer(r) }) });
}

const billed = (since: number) =>
  bills
    .slice(since)
    .reduce(
      (n, x) =>
        n + PRICES[x.model].cost({ prompt: x.input, completion: x.output, cached: 0, cacheWrite: 0, reasoning: 0 }),
      0,
    );

// ---------------------------------------------------------------------------------------------------------------
// The attacker

const BUDGET = 20_000; // 0.02 USD

interface Outcome {
  status: number;
  /** What the upstreams billed for the request, at the configured prices (micro-USD). */
  billed: number;
  /** What the account was charged. */
  charged: number;
  /** Shortfall rows written for the account. */
  shortfalls: number;
}

async function attack(
  path: string,
  body: object,
  headers: Record<string, string> = {},
): Promise<Outcome & { json: any }> {
  const k = await gw.newKey({}, BUDGET);
  const since = bills.length;
  billLikeProviders();
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  await gw.settled();
  openai.plans.length = claude.plans.length = gemini.plans.length = azure.plans.length = 0;
  const rows = await gw.app.db('ledger').where('account_id', k.accountId);
  const charged = -rows.filter((r) => r.kind === 'usage').reduce((n, r) => n + Number(r.amount_micros), 0);
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return {
    status: res.status,
    billed: billed(since),
    charged,
    shortfalls: rows.filter((r) => r.kind === 'shortfall').length,
    json,
  };
}

/** The operator never pays: the request was refused before anything was billed, or its whole bill was charged. */
function covered(o: Outcome) {
  return { charged: o.charged >= o.billed, shortfalls: o.shortfalls };
}
const COVERED = { charged: true, shortfalls: 0 };

// ---------------------------------------------------------------------------------------------------------------

describe('attachments are what their data says they are', () => {
  const video = `data:video/mp4;base64,${'AAAAIGZ0eXBpc29t'.repeat(100_000)}`; // 1.6 MB of base64: ten minutes at 20 kbit/s
  const audio = `data:audio/mpeg;base64,${'SUQzBAAAAAAAI1RT'.repeat(10_000)}`;

  test('chat on gemini: a video sent as an "image" data URL is refused, never billed as 4,800 image tokens', async () => {
    const o = await attack('/v1/chat/completions', {
      model: 'gem',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'describe' },
            { type: 'image_url', image_url: { url: video } },
          ],
        },
      ],
      max_tokens: 16,
    });
    expect(covered(o)).toEqual(COVERED);
    expect(o.status).toBe(400);
    expect(o.json.error.message).toBe('Video input is not accepted through this gateway');
  });

  test('/v1/messages bridged to gemini: an "image" block of media type video/mp4 is refused', async () => {
    const data = video.slice('data:video/mp4;base64,'.length);
    const o = await attack('/v1/messages', {
      model: 'gem',
      max_tokens: 16,
      messages: [
        { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'video/mp4', data } }] },
      ],
    });
    expect(covered(o)).toEqual(COVERED);
    expect(o.status).toBe(400);
  });

  test('/v1/responses bridged to gemini: an input_image that is a video is refused', async () => {
    const o = await attack('/v1/responses', {
      model: 'gem',
      max_output_tokens: 16,
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: video }] }],
    });
    expect(covered(o)).toEqual(COVERED);
    expect(o.status).toBe(400);
  });

  test("chat on gemini: Gemini's own price-raising fields never reach it (the request is rebuilt from the fields chat has)", async () => {
    const o = await attack('/v1/chat/completions', {
      model: 'gem',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      cachedContent: 'cachedContents/operators-cache',
      generationConfig: {
        maxOutputTokens: 65_536,
        thinkingConfig: { thinkingBudget: 32_768 },
        mediaResolution: 'MEDIA_RESOLUTION_HIGH',
      },
      google_search: {},
    });
    expect(covered(o)).toEqual(COVERED);
    expect(o.status).toBe(200);
    const sent = gemini.last().body;
    expect(Object.keys(sent).sort()).toEqual(
      ['contents', 'generationConfig', 'toolConfig', 'tools'].filter((k) => k in sent).sort(),
    );
    expect(sent.tools).toEqual([{ functionDeclarations: [{ name: 'f', parametersJsonSchema: { type: 'object' } }] }]);
    expect(sent.generationConfig).toEqual({ maxOutputTokens: 16 });
    // and Gemini's tools themselves are not chat tools: refused by the contract
    const grounded = await attack('/v1/chat/completions', {
      model: 'gem',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ googleSearch: {} }],
    });
    expect({ status: grounded.status, ...covered(grounded) }).toEqual({ status: 400, ...COVERED });
  });

  test('audio disguised as an image or a file is audio: refused unless the model allows audio', async () => {
    for (const part of [
      { type: 'image_url', image_url: { url: audio } },
      { type: 'file', file: { file_data: audio, filename: 'a.mp3' } },
      { type: 'file', file: { file_data: audio.slice(audio.indexOf(',') + 1), filename: 'talk.mp3' } }, // raw base64: Gemini would read the name
    ]) {
      const o = await attack('/v1/chat/completions', {
        model: 'gem',
        messages: [{ role: 'user', content: [part] }],
        max_tokens: 16,
      });
      expect(covered(o)).toEqual(COVERED);
      expect({ part: part.type, status: o.status }).toEqual({ part: part.type, status: 400 });
    }
  });
});

describe('/v1/messages on an anthropic route, natively', () => {
  const ask = { model: 'claude', max_tokens: 100, messages: [{ role: 'user', content: 'Run it.' }] };

  test("a file in the operator's Anthropic Files API (container_upload, a file source) is refused", async () => {
    for (const block of [
      { type: 'container_upload', file_id: 'file_011' },
      { type: 'document', source: { type: 'file', file_id: 'file_011' } },
    ]) {
      const o = await attack('/v1/messages', {
        ...ask,
        messages: [{ role: 'user', content: [block, { type: 'text', text: 'read it' }] }],
      });
      expect({ block: block.type, status: o.status, ...covered(o) }).toEqual({
        block: block.type,
        status: 400,
        ...COVERED,
      });
    }
  });

  test('tool schemas are rendered as JSON: a string is held at its escaped size (a control character is six bytes there)', async () => {
    const body = {
      ...ask,
      max_tokens: 16,
      tools: [{ name: 'f', description: '\u0001'.repeat(40_000), input_schema: { type: 'object' } }],
    };
    // exactly what the request's hold costs: the account pays nothing beyond it
    const k = await gw.newKey(
      {},
      PRICES.claude.worstCase(promptBound(inspect(body), { image_tokens: 4_800, file_tokens: 300_000 }), 16),
    );
    const since = bills.length;
    billLikeProviders();
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    await gw.settled();
    const rows = await gw.app.db('ledger').where('account_id', k.accountId);
    const charged = -rows.filter((r) => r.kind === 'usage').reduce((n, r) => n + Number(r.amount_micros), 0);
    expect(
      covered({
        status: 200,
        billed: billed(since),
        charged,
        shortfalls: rows.filter((r) => r.kind === 'shortfall').length,
      }),
    ).toEqual(COVERED);
  });

  test("Anthropic's own client tools (computer use, bash, text editor) are held at their documented overhead", async () => {
    const tools = [
      { type: 'computer_20250124', name: 'computer', display_width_px: 1024, display_height_px: 768 },
      { type: 'bash_20250124', name: 'bash' },
      { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
    ];
    const o = await attack('/v1/messages', { ...ask, max_tokens: 1000, tools });
    expect(covered(o)).toEqual(COVERED);
  });

  test('server tools that run at Anthropic (code execution, web fetch) are dropped unless the model allows them', async () => {
    for (const tool of [
      { type: 'code_execution_20250825', name: 'code_execution' },
      { type: 'web_fetch_20250910', name: 'web_fetch' },
    ]) {
      const o = await attack('/v1/messages', {
        ...ask,
        tools: [tool, { name: 'mine', input_schema: { type: 'object' } }],
      });
      expect({ tool: tool.type, ...covered(o) }).toEqual({ tool: tool.type, ...COVERED });
      expect(o.status).toBe(200);
      expect(claude.last().body.tools.map((t: { name: string }) => t.name)).toEqual(['mine']);
    }
  });

  test('MCP servers and containers (skills) are dropped unless the model allows server tools', async () => {
    let o = await attack(
      '/v1/messages',
      { ...ask, mcp_servers: [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'docs' }] },
      { 'anthropic-beta': 'mcp-client-2025-04-04' },
    );
    expect(covered(o)).toEqual(COVERED);
    expect(claude.last().body.mcp_servers).toBeUndefined();
    expect(claude.last().headers['anthropic-beta']).toBeUndefined();
    o = await attack(
      '/v1/messages',
      { ...ask, container: { skills: [{ type: 'anthropic', skill_id: 'pptx', version: 'latest' }] } },
      { 'anthropic-beta': 'skills-2025-10-02,code-execution-2025-08-25' },
    );
    expect(covered(o)).toEqual(COVERED);
    expect(claude.last().body.container).toBeUndefined();
  });

  test('server-side compaction is dropped unless allowed; when allowed, every iteration is billed', async () => {
    const compact = {
      ...ask,
      context_management: {
        edits: [
          { type: 'compact_20260112', trigger: { type: 'input_tokens', value: 50_000 } },
          { type: 'clear_tool_uses_20250919' },
        ],
      },
    };
    let o = await attack('/v1/messages', compact, {
      'anthropic-beta': 'compact-2026-01-12,context-management-2025-06-27',
    });
    expect(covered(o)).toEqual(COVERED);
    expect(claude.last().body.context_management).toEqual({ edits: [{ type: 'clear_tool_uses_20250919' }] });
    expect(claude.last().headers['anthropic-beta']).toBe('context-management-2025-06-27');
    // allowed (the operator prices it in): the usage's iterations are what Anthropic bills, and all are charged
    claude.plan({ kind: 'answer', with: (r) => ({ kind: 'json', body: anthropicAnswer(r) }) });
    const rich = await gw.newKey();
    const since = bills.length;
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${rich.secret}`,
        'content-type': 'application/json',
        'anthropic-beta': 'compact-2026-01-12',
      },
      body: JSON.stringify({ ...compact, model: 'claude-all' }),
    });
    expect(res.status).toBe(200);
    await gw.settled();
    const record = await gw.app.db('usage_records').where('account_id', rich.accountId).first();
    expect(Number(record.cost_micros)).toBe(billed(since));
  });

  test('pricier processing is stripped unless allowed: fast mode, US-only inference, the 1M-token context beta, 1-hour cache writes', async () => {
    claude.plan({ kind: 'answer', with: (r) => ({ kind: 'json', body: anthropicAnswer(r) }) });
    const priced = {
      ...ask,
      speed: 'fast',
      inference_geo: 'us',
      system: [{ type: 'text', text: 'long instructions', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
      ],
      tools: [{ name: 't', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral', ttl: '1h' } }],
    };
    const beta = { 'anthropic-beta': 'context-1m-2025-08-07,fast-mode-2026-02-01,interleaved-thinking-2025-05-14' };
    expect((await attack('/v1/messages', priced, beta)).status).toBe(200);
    let sent = claude.last();
    expect(sent.body.speed).toBeUndefined();
    expect(sent.body.inference_geo).toBeUndefined();
    expect(sent.body.service_tier).toBe('standard_only');
    expect(sent.body.system[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(sent.body.messages[0].content[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(sent.body.tools[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(sent.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
    // a model whose prices cover them passes them on
    const rich = await gw.newKey();
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${rich.secret}`, 'content-type': 'application/json', ...beta },
      body: JSON.stringify({ ...priced, model: 'claude-all' }),
    });
    expect(res.status).toBe(200);
    sent = claude.last();
    expect(sent.body).toMatchObject({ speed: 'fast', inference_geo: 'us' });
    expect(sent.body.system[0].cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
    expect(sent.headers['anthropic-beta']).toBe(
      'context-1m-2025-08-07,fast-mode-2026-02-01,interleaved-thinking-2025-05-14',
    );
  });

  test("usage with iterations is billed as their sum (the top-level numbers are the last pass's only)", async () => {
    const iterations = [
      { type: 'compaction', input_tokens: 1_000, output_tokens: 200 },
      { type: 'message', input_tokens: 300, output_tokens: 40 },
    ];
    const msg = message([{ type: 'text', text: 'ok' }], { usage: { input_tokens: 300, output_tokens: 40 } });
    claude.plan({ kind: 'json', body: { ...msg, usage: { ...msg.usage, iterations } } });
    const k = await gw.newKey();
    await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask, model: 'claude-all' }),
    });
    await gw.settled();
    expect(await gw.app.db('usage_records').where('account_id', k.accountId).first()).toMatchObject({
      prompt_tokens: 1_300,
      completion_tokens: 240,
      cost_micros: 1_300 * 3 + 240 * 15,
    });
    // streamed: message_delta carries the iterations
    const events = streamEvents(
      message([{ type: 'text', text: 'ok' }], { usage: { input_tokens: 300, output_tokens: 40 } }),
    );
    const delta = events.find((e) => e.type === 'message_delta')!;
    (delta.usage as object) = { output_tokens: 40, input_tokens: 300, iterations };
    claude.plan({ kind: 'sse', events });
    const s = await gw.newKey();
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask, model: 'claude-all', stream: true }),
    });
    await res.text();
    await gw.settled();
    expect(await gw.app.db('usage_records').where('account_id', s.accountId).first()).toMatchObject({
      prompt_tokens: 1_300,
      completion_tokens: 240,
    });
  });
});

describe('/v1/responses on an openai route, natively', () => {
  const ask = { model: 'gpt', max_output_tokens: 100, input: 'hi' };

  test("what lives in the operator's OpenAI account is refused: stored prompts, conversations, item references", async () => {
    for (const [param, extra] of [
      ['prompt', { prompt: { id: 'pmpt_abc', version: '2' } }],
      ['conversation', { conversation: 'conv_abc' }],
      [
        'input',
        {
          input: [
            { type: 'item_reference', id: 'msg_abc' },
            { role: 'user', content: 'and so?' },
          ],
        },
      ],
    ] as const) {
      const o = await attack('/v1/responses', { ...ask, ...extra });
      expect({ param, ...covered(o), status: o.status }).toEqual({ param, ...COVERED, status: 400 });
      expect(o.json.error.param).toBe(param);
    }
    openai.plans.length = 0;
  });

  test('background mode is refused: the gateway would never see what the answer cost', async () => {
    const o = await attack('/v1/responses', { ...ask, background: true });
    expect(covered(o)).toEqual(COVERED);
    expect(o.status).toBe(400);
    expect(o.json.error.param).toBe('background');
    openai.plans.length = 0;
  });

  test('tools run by OpenAI are dropped unless allowed: hosted shells, server-side tool search, programmatic calling, compaction', async () => {
    const tools = [
      { type: 'function', name: 'f', parameters: { type: 'object' } },
      { type: 'shell', environment: { type: 'container_auto' } },
      { type: 'shell' },
      { type: 'tool_search', execution: 'server' },
      { type: 'tool_search', execution: 'client' },
      { type: 'programmatic_tool_calling' },
      { type: 'code_interpreter', container: { type: 'auto' } },
      { type: 'apply_patch' },
      { type: 'some_future_hosted_tool' },
    ];
    const k = await gw.newKey();
    const send = (model: string) =>
      fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...ask, model, tools, context_management: [{ type: 'compaction' }] }),
      });
    expect((await send('gpt')).status).toBe(200);
    expect(openai.last().body.tools).toEqual([tools[0], tools[2], tools[4], tools[7]]);
    expect(openai.last().body.context_management).toBeUndefined();
    expect((await send('gpt-all')).status).toBe(200);
    expect(openai.last().body.tools).toEqual(tools);
  });
});

describe('pricier service tiers (OpenAI: priority, scale, fast) are served at the standard tier unless allowed; unknown ones are refused', () => {
  test.each([
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }] }],
    ['/v1/responses', { input: 'x' }],
  ])('%s', async (path, body) => {
    const k = await gw.newKey();
    const send = (model: string, tier: string) =>
      fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, ...body, service_tier: tier }),
      });
    for (const tier of ['priority', 'scale', 'fast', 'auto', 'default', 'flex']) {
      expect((await send('gpt', tier)).status).toBe(200);
      expect({ tier, sent: openai.last().body.service_tier }).toEqual({
        tier,
        sent: ['auto', 'default', 'flex'].includes(tier) ? tier : undefined,
      });
      expect((await send('gpt-all', tier)).status).toBe(200);
      expect({ tier, sent: openai.last().body.service_tier }).toEqual({ tier, sent: tier });
    }
    const unknown = await send('gpt', 'ultrafast');
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as any).error.param).toBe('service_tier');
  });
});

describe('/v1/chat/completions on an azure route', () => {
  test('"On your data" (data_sources: documents an Azure search puts into the prompt) is dropped unless allowed', async () => {
    const dataSources = [
      {
        type: 'azure_search',
        parameters: {
          endpoint: 'https://attacker.search.windows.net',
          index_name: 'big',
          authentication: { type: 'api_key', key: 'theirs' },
          top_n_documents: 20,
        },
      },
    ];
    const o = await attack('/v1/chat/completions', {
      model: 'azgpt',
      messages: [{ role: 'user', content: 'summarise everything' }],
      max_tokens: 100,
      data_sources: dataSources,
    });
    expect(covered(o)).toEqual(COVERED);
    expect(o.status).toBe(200);
    expect(azure.last().body.data_sources).toBeUndefined();
  });
});

describe('/v1/completions on a chat model (sent through chat)', () => {
  test('is held to the same rules as chat: pricier tiers and "on your data" stripped, web search and audio refused, a prediction held as output', async () => {
    const k = await gw.newKey();
    const send = (body: object) =>
      fetch(`${gw.url}/v1/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'x', max_tokens: 50, ...body }),
      });
    expect((await send({ model: 'gpt', service_tier: 'priority' })).status).toBe(200);
    expect(openai.last().body.service_tier).toBeUndefined();
    expect((await send({ model: 'azgpt', data_sources: [{ type: 'azure_search', parameters: {} }] })).status).toBe(200);
    expect(azure.last().body.data_sources).toBeUndefined();
    for (const field of [{ web_search_options: {} }, { modalities: ['text', 'audio'] }]) {
      const res = await send({ model: 'gpt', ...field });
      expect({ field: Object.keys(field)[0], status: res.status }).toEqual({
        field: Object.keys(field)[0],
        status: 400,
      });
    }
    expect((await send({ model: 'gpt', prediction: { type: 'content', content: 'y'.repeat(300) } })).status).toBe(200);
    expect(openai.last().body.max_tokens).toBe(350);
  });
});

describe('upstreams whose limit does not bound their reasoning', () => {
  /** DeepSeek's R1 as its API documents it: max_tokens bounds the answer; the chain of thought before it (here 8,000 tokens) comes on top. */
  function reasonerAnswer(r: Received) {
    const b = r.body;
    const input = textTokens(b.messages);
    const output = (b.max_tokens ?? 4_096) + 8_000;
    bills.push({ model: 'r1', input, output });
    return {
      id: 'c-r1',
      object: 'chat.completion',
      created: 1,
      model: 'r1',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'ok', reasoning_content: '...' },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
      usage: {
        prompt_tokens: input,
        completion_tokens: output,
        total_tokens: input + output,
        completion_tokens_details: { reasoning_tokens: 8_000 },
      },
    };
  }
  const body = { messages: [{ role: 'user', content: 'prove it' }], max_tokens: 16 };
  const send = async (model: string, money: number) => {
    const k = await gw.newKey({}, money);
    const since = bills.length;
    openai.plans.length = 0;
    openai.plan({ kind: 'answer', with: (r) => ({ kind: 'json', body: reasonerAnswer(r) }) });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, ...body }),
    });
    await gw.settled();
    openai.plans.length = 0;
    const rows = await gw.app.db('ledger').where('account_id', k.accountId);
    const charged = -rows.filter((x) => x.kind === 'usage').reduce((n, x) => n + Number(x.amount_micros), 0);
    return {
      status: res.status,
      billed: billed(since),
      charged,
      shortfalls: rows.filter((x) => x.kind === 'shortfall').length,
    };
  };

  test('models[].extra_output_tokens holds what such an upstream generates beyond the limit it is sent', async () => {
    // money for exactly the prompt, 16 tokens of answer and 8,000 of reasoning
    const money = PRICES.r1.worstCase(
      promptBound(inspect({ model: 'r1', ...body }), { image_tokens: 4_800, file_tokens: 300_000 }),
      16 + 8_000,
    );
    const o = await send('r1', money);
    expect(o.status).toBe(200);
    expect(openai.last().body.max_tokens).toBe(16); // the limit sent is the answer's, not the reserve
    expect(covered(o)).toEqual(COVERED);
    // without it, the same money is spent as the answer's limit, and the reasoning comes on top: a shortfall
    const unset = await send('r1-unset', money);
    expect(covered(unset)).toEqual({ charged: false, shortfalls: 1 });
    // too little money for even one token of answer on top of the reserve: refused
    expect((await send('r1', PRICES.r1.worstCase(50, 8_000))).status).toBe(429);
  });
});

describe('output multipliers', () => {
  test('a balance short for every choice is refused, never sent with an output limit of 0 per choice', async () => {
    // best_of 20 on a chat model: 20 choices' worth is held; the balance pays 18 output tokens after the prompt
    const body = { model: 'gem', prompt: 'Say something.', best_of: 20, max_tokens: 100 };
    const money = PRICES.gem.worstCase(promptBound(inspect(body), { image_tokens: 4_800, file_tokens: 300_000 }), 18);
    const k = await gw.newKey({}, money);
    const before = gemini.requests.length;
    const res = await fetch(`${gw.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const sent = gemini.requests.slice(before).map((r) => r.body.generationConfig?.maxOutputTokens);
    expect({ status: res.status, sent }).toEqual({ status: 429, sent: [] });
  });

  test('best_of on chat (an OpenAI-compatible server generates that many) multiplies the allowance like n', async () => {
    const body = { model: 'gpt', messages: [{ role: 'user', content: 'x' }], max_tokens: 500, best_of: 4 };
    const k = await gw.newKey({}, 3_000);
    const affordable = PRICES.gpt.affordableOutput(
      promptBound(inspect(body), { image_tokens: 4_800, file_tokens: 300_000 }),
      3_000,
    )!; // about 700
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    expect(openai.last().body.max_tokens).toBe(Math.floor(affordable / 4));
  });
});

describe('a stream cut short is billed what it certainly cost', () => {
  /** Streams `body` to `path`, leaves once `marker` went by, and returns the request's usage record. */
  async function cut(path: string, body: object, marker: string) {
    const k = await gw.newKey();
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes(marker)) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    for (let i = 0; i < 100; i++) {
      await gw.settled();
      const record = await gw.app.db('usage_records').where('account_id', k.accountId).first();
      if (record) return record;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('no usage record');
  }

  test('gemini: the usage reported so far, thinking included (a stream never shows it), not only the visible words', async () => {
    const first = geminiResponse([{ text: 'Hi' }], undefined, {
      promptTokenCount: 1_200,
      candidatesTokenCount: 1,
      thoughtsTokenCount: 3_000,
      totalTokenCount: 4_201,
    });
    gemini.plan({ kind: 'stall', events: [first] });
    const record = await cut(
      '/v1/chat/completions',
      { model: 'gem', messages: [{ role: 'user', content: 'think hard' }] },
      'Hi',
    );
    expect(record).toMatchObject({ status: 499, prompt_tokens: 1_200, completion_tokens: 3_001 });
  });

  test('anthropic through chat: the prompt as Anthropic counted it in message_start', async () => {
    const msg = message([{ type: 'text', text: 'Hello there' }], {
      usage: { input_tokens: 5_000, cache_read_input_tokens: 2_000, output_tokens: 9 },
    });
    claude.plan({ kind: 'stall', events: streamEvents(msg).slice(0, 4) });
    const record = await cut(
      '/v1/chat/completions',
      { model: 'claude', messages: [{ role: 'user', content: 'hi' }] },
      'Hello',
    );
    expect(record).toMatchObject({ status: 499, prompt_tokens: 7_000, cached_tokens: 2_000 });
  });

  test('anthropic natively: thinking, tool input and text deltas, and a redacted_thinking block (encrypted thinking, billed as output) count', async () => {
    const data =
      'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB4URj'.repeat(20);
    const events = [
      {
        type: 'message_start',
        message: {
          id: 'msg_r',
          type: 'message',
          role: 'assistant',
          model: 'claude',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 20, output_tokens: 1 },
        },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'redacted_thinking', data } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'thinking_delta', thinking: 'Let me weigh this.' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'signature_delta', signature: 'c2lnbmF0dXJl' } },
      { type: 'content_block_stop', index: 1 },
      {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} },
      },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"city": "Paris"}' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'content_block_start', index: 3, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 3, delta: { type: 'text_delta', text: 'Sure' } },
    ];
    claude.plan({ kind: 'stall', events });
    const record = await cut(
      '/v1/messages',
      { model: 'claude', max_tokens: 4_000, messages: [{ role: 'user', content: 'hi' }] },
      'Sure',
    );
    expect(record.status).toBe(499);
    expect(Number(record.completion_tokens)).toBe(countText(`${data}Let me weigh this.{"city": "Paris"}Sure`));
  });

  test("responses natively: reasoning summary, tool argument and text deltas, and a reasoning item's encrypted content (no delta shows that reasoning) count", async () => {
    const encrypted = 'gAAAAABoZ3x5'.repeat(100);
    const shell = { ...responseObject({ model: 'gpt' }, ''), status: 'in_progress', output: [], usage: null };
    const events = [
      { type: 'response.created', sequence_number: 0, response: shell },
      {
        type: 'response.output_item.added',
        sequence_number: 1,
        output_index: 0,
        item: { type: 'reasoning', id: 'rs_1', summary: [] },
      },
      {
        type: 'response.reasoning_summary_text.delta',
        sequence_number: 2,
        item_id: 'rs_1',
        output_index: 0,
        summary_index: 0,
        delta: 'Weighing it.',
      },
      {
        type: 'response.output_item.done',
        sequence_number: 3,
        output_index: 0,
        item: {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'Weighing it.' }],
          encrypted_content: encrypted,
        },
      },
      {
        type: 'response.function_call_arguments.delta',
        sequence_number: 4,
        item_id: 'fc_1',
        output_index: 1,
        delta: '{"a":1}',
      },
      {
        type: 'response.output_text.delta',
        sequence_number: 5,
        item_id: 'msg_1',
        output_index: 2,
        content_index: 0,
        delta: 'Done',
      },
    ].map(responseFrame);
    openai.plan({ kind: 'stall', events });
    const record = await cut(
      '/v1/responses',
      { model: 'gpt', input: 'hi', include: ['reasoning.encrypted_content'] },
      'Done',
    );
    expect(record.status).toBe(499);
    expect(Number(record.completion_tokens)).toBe(countText(`Weighing it.${encrypted}{"a":1}Done`));
  });
});
