/**
 * POST /v1/audio/speech, the paid path of a binary answer: the official `openai` SDK's `audio.speech.create` through
 * the gateway against fake OpenAI and Azure upstreams on loopback (and the mock provider). The audio reaches the
 * client as the upstream sends it, byte for byte; the balance changes by exactly the documented price (characters of
 * the input; or the text and audio tokens the upstream reports, which it does only in events: asked for them); the
 * hold covers the input before anything is sent; a client that leaves mid-answer cancels the upstream call and pays
 * what was sent. On the database in DATABASE_URL.
 */
import OpenAI from 'openai';
import { countText } from '../../src/gateway/tokenizer/count';
import { OUTPUT_OVERHEAD, OUTPUT_PER_BYTE } from '../../src/gateway/operations/speech';
import { AZURE_KEY, FakeAzure } from '../fakes/azureUpstream';
import { FakeOpenAI, SPEECH_USAGE, speechAudio, speechEvents } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';

let up: FakeOpenAI;
let azure: FakeAzure;
let gw: TestGateway;

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  azure = await new FakeAzure().start();
  gw = await startGateway(`
limits: { rpm: 0, tpm: 0 }
providers:
  oa: { type: openai, base_url: "${up.url}" }
  az: { type: azure, base_url: "${azure.url}", api_key: "${AZURE_KEY}", api_version: 2025-03-01-preview }
  local: { type: mock, latency_ms: 5 }
models:
  - { id: tts-1, kind: speech, price: { characters: 15 }, routes: [ { provider: oa, model: tts-1-upstream } ] }
  - { id: mini-tts, kind: speech, price: { input: 0.6, output: 12 }, routes: [ { provider: oa, model: gpt-4o-mini-tts } ] }
  - { id: azure-tts, kind: speech, price: { characters: 30 }, routes: [ { provider: az, model: tts-prod } ] }
  - { id: mock-tts, kind: speech, price: { characters: 15 }, routes: [ { provider: local } ] }
  - { id: gpt, kind: chat, price: { input: 1, output: 4 }, routes: [ { provider: oa } ] }
`);
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
  await azure?.close();
});

const db = () => gw.app.db;
const balance = async (id: number) => Number((await db()('accounts').where('id', id).first()).balance_micros);
const usageOf = (requestId: string | null) => db()('usage_records').where('request_id', requestId!).first();

async function account(credits = 10_000_000, scopes?: Parameters<TestGateway['newKey']>[0]) {
  const k = await gw.newKey(scopes, credits);
  return { ...k, client: new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 }) };
}

const speak = (secret: string, body: object, signal?: AbortSignal) =>
  fetch(`${gw.url}/v1/audio/speech`, {
    method: 'POST',
    signal,
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ voice: 'alloy', ...body }),
  });

/** A gate the fake upstream waits at, and the test opens. */
function gate() {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

/** Reads a body until at least `n` bytes came (or it ended). */
async function readAtLeast(reader: ReadableStreamDefaultReader<Uint8Array>, n: number): Promise<Buffer> {
  const got: Buffer[] = [];
  let size = 0;
  while (size < n) {
    const r = await reader.read();
    if (r.done) break;
    got.push(Buffer.from(r.value));
    size += r.value.length;
  }
  return Buffer.concat(got);
}

describe('the audio, streamed', () => {
  test('tts-1: the first bytes reach the client while the upstream still holds back the rest; every byte as sent; characters × price', async () => {
    const a = await account();
    const before = await balance(a.accountId);
    const g = gate();
    const [first, rest] = [Buffer.from('ID3\x04first-frame'), Buffer.from('...and the rest of the audio')];
    up.plan({ kind: 'bytes', type: 'audio/mpeg', pieces: [first, { wait: g.wait }, rest] });
    const input = 'Héllo wörld 👋'; // 13 characters: the emoji is one (two UTF-16 units, four UTF-8 bytes)
    const { data, response } = await a.client.audio.speech
      .create({ model: 'tts-1', voice: 'alloy', input })
      .withResponse();
    expect(response.headers.get('content-type')).toBe('audio/mpeg');
    const reader = data.body!.getReader();
    expect(await readAtLeast(reader, first.length)).toEqual(first); // the upstream has not finished
    g.open();
    expect(await readAtLeast(reader, Infinity)).toEqual(rest);
    expect(up.last()).toMatchObject({
      path: '/v1/audio/speech',
      body: { model: 'tts-1-upstream', voice: 'alloy', input },
    });
    expect(up.last().body.stream_format).toBeUndefined(); // priced by characters: the audio asked for as it is
    await gw.settled();
    expect(before - (await balance(a.accountId))).toBe(13 * 15); // 15 USD per million characters
    expect(await usageOf(response.headers.get('x-request-id'))).toMatchObject({
      status: 200,
      endpoint: 'speech',
      characters: 13,
      completion_tokens: 0,
      cost_micros: 195,
    });
  });

  test('each format comes with its media type; the rate-limit headers too', async () => {
    const a = await account(10_000_000, { rpmLimit: 100, tpmLimit: 1_000_000 });
    for (const [format, type] of [
      ['wav', 'audio/wav'],
      ['pcm', 'audio/pcm'],
      ['opus', 'audio/opus'],
    ] as const) {
      const res = await a.client.audio.speech.create({
        model: 'tts-1',
        voice: 'ash',
        input: 'hi',
        response_format: format,
      });
      expect([format, res.headers.get('content-type')]).toEqual([format, type]);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('100');
      expect(Buffer.from(await res.arrayBuffer())).toEqual(speechAudio({ input: 'hi', response_format: format }));
    }
  });

  test('gpt-4o-mini-tts (priced by tokens): asked upstream for events, whose audio the client gets as bytes; charged the usage they report', async () => {
    const a = await account();
    const before = await balance(a.accountId);
    const input = 'The quick brown fox.';
    const res = await a.client.audio.speech.create({
      model: 'mini-tts',
      voice: 'coral',
      input,
      instructions: 'Cheerfully.',
      response_format: 'wav',
    });
    expect(res.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await res.arrayBuffer())).toEqual(speechAudio({ input, response_format: 'wav' }));
    expect(up.last().body).toMatchObject({
      model: 'gpt-4o-mini-tts',
      stream_format: 'sse',
      instructions: 'Cheerfully.',
    });
    await gw.settled();
    // 7 input tokens × 0.6 + 50 audio tokens × 12 (USD per million) = 604.2 micro-USD, rounded up once
    expect(before - (await balance(a.accountId))).toBe(605);
    expect(await usageOf(res.headers.get('x-request-id'))).toMatchObject({
      counted: 'upstream',
      prompt_tokens: 7,
      completion_tokens: 50,
      characters: input.length,
    });
  });

  test('stream_format sse: the events as OpenAI sends them, the usage at the end, and the same price', async () => {
    const a = await account();
    const before = await balance(a.accountId);
    const res = await a.client.audio.speech.create({
      model: 'mini-tts',
      voice: 'coral',
      input: 'Hello',
      stream_format: 'sse',
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((f) => JSON.parse(f.replace(/^data: /, '')));
    expect(events).toEqual(speechEvents(speechAudio({ input: 'Hello' })));
    expect(events.at(-1)).toEqual({ type: 'speech.audio.done', usage: SPEECH_USAGE });
    await gw.settled();
    expect(before - (await balance(a.accountId))).toBe(605);
  });

  test('Azure: the deployment in the path with the api-version, the key in api-key; the audio passed on', async () => {
    const a = await account();
    const before = await balance(a.accountId);
    const res = await a.client.audio.speech.create({ model: 'azure-tts', voice: 'nova', input: 'Grüß dich' });
    expect(Buffer.from(await res.arrayBuffer())).toEqual(speechAudio({ input: 'Grüß dich' }));
    const r = azure.last();
    expect(r.path).toBe('/openai/deployments/tts-prod/audio/speech?api-version=2025-03-01-preview');
    expect(r.headers['api-key']).toBe(AZURE_KEY);
    expect(r.headers.accept).toBe('*/*');
    expect(r.body).toMatchObject({ model: 'tts-prod', input: 'Grüß dich', voice: 'nova' });
    await gw.settled();
    expect(before - (await balance(a.accountId))).toBe(9 * 30);
  });

  test('the mock provider: a valid WAV (RIFF, 24 kHz 16-bit mono, its sizes right) and MP3 frames, streamed', async () => {
    const a = await account();
    const wav = Buffer.from(
      await (
        await a.client.audio.speech.create({ model: 'mock-tts', voice: 'alloy', input: 'Hi', response_format: 'wav' })
      ).arrayBuffer(),
    );
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.subarray(8, 16).toString()).toBe('WAVEfmt ');
    expect([wav.readUInt16LE(20), wav.readUInt16LE(22), wav.readUInt32LE(24), wav.readUInt16LE(34)]).toEqual([
      1, 1, 24_000, 16,
    ]);
    expect(wav.readUInt32LE(40)).toBe(wav.length - 44);
    expect(wav.length - 44).toBe(2 * 24 * 420); // 300 ms + 60 ms a character, in 16-bit samples at 24 kHz
    const mp3 = Buffer.from(
      await (await a.client.audio.speech.create({ model: 'mock-tts', voice: 'alloy', input: 'Hi' })).arrayBuffer(),
    );
    expect(mp3.length % 96).toBe(0);
    for (let at = 0; at < mp3.length; at += 96) expect(mp3.readUInt32BE(at)).toBe(0xfff344c0);
    const refused = await speak(a.secret, { model: 'mock-tts', input: 'Hi', response_format: 'flac' });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as any).error.message).toBe('The mock provider speaks mp3, wav and pcm');
  });
});

describe('the hold covers the input before anything is sent', () => {
  test('characters: a 4096-character input on a poor account is refused; a shorter one on the same account served', async () => {
    const a = await account(50_000); // 0.05 USD; 4096 characters at 15 USD per million hold 0.06144
    const sent = up.requests.length;
    const refused = await speak(a.secret, { model: 'tts-1', input: 'a'.repeat(4096) });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as any).error.code).toBe('insufficient_quota');
    expect(up.requests.length).toBe(sent); // nothing reached the upstream
    const served = await speak(a.secret, { model: 'tts-1', input: 'a'.repeat(3000) });
    expect(served.status).toBe(200);
    await served.arrayBuffer();
    await gw.settled();
    expect(await balance(a.accountId)).toBe(50_000 - 45_000);
  });

  test('a 1M-character input is a 400 naming `input`, whatever the balance; nothing is sent', async () => {
    const a = await account(1);
    const sent = up.requests.length;
    const err = await a.client.audio.speech
      .create({ model: 'tts-1', voice: 'alloy', input: 'x'.repeat(1_000_000) })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.error).toMatchObject({ type: 'invalid_request_error', param: 'input' });
    expect(up.requests.length).toBe(sent);
  });

  test('tokens: the hold covers the most audio the input can produce, and is never lowered to what the money pays', async () => {
    // 100 bytes: (200 + 8 × 100) audio tokens × 12 = 12,000 micro-USD, more than the account has
    const a = await account(10_000);
    const sent = up.requests.length;
    const refused = await speak(a.secret, { model: 'mini-tts', input: 'b'.repeat(100) });
    expect(refused.status).toBe(429);
    expect(up.requests.length).toBe(sent);
    const served = await speak(a.secret, { model: 'mini-tts', input: 'b'.repeat(40) }); // 520 tokens: 6,240
    expect(served.status).toBe(200);
    await served.arrayBuffer();
  });
});

describe('a client that leaves mid-answer', () => {
  test('cancels the upstream call and pays for the characters it had sent', async () => {
    const a = await account();
    const before = await balance(a.accountId);
    const g = gate();
    const aborts = up.clientAborts;
    up.plan({
      kind: 'bytes',
      type: 'audio/mpeg',
      pieces: [Buffer.from('first bytes'), { wait: g.wait }, Buffer.from('never')],
    });
    const leave = new AbortController();
    const res = await speak(a.secret, { model: 'tts-1', input: 'Goodbye now' }, leave.signal);
    const id = res.headers.get('x-request-id');
    expect((await readAtLeast(res.body!.getReader(), 5)).toString()).toBe('first bytes');
    leave.abort();
    await until(async () => up.clientAborts > aborts);
    await gw.settled();
    g.open();
    expect(await usageOf(id)).toMatchObject({ status: 499, characters: 11, cost_micros: 165 });
    expect(before - (await balance(a.accountId))).toBe(165);
  });

  test('priced by tokens, cut before the usage came: the prompt as counted and the audio bound, which the hold covered', async () => {
    const a = await account();
    const before = await balance(a.accountId);
    const input = 'Leaving early';
    up.plan({ kind: 'stall', events: speechEvents(Buffer.from('some audio')).slice(0, 1) });
    const leave = new AbortController();
    const res = await speak(a.secret, { model: 'mini-tts', input }, leave.signal);
    const id = res.headers.get('x-request-id');
    expect((await readAtLeast(res.body!.getReader(), 4)).toString()).toBe('some ');
    leave.abort();
    await gw.settled();
    const prompt = countText(input);
    const bound = OUTPUT_OVERHEAD + OUTPUT_PER_BYTE * input.length;
    const cost = Math.ceil((prompt * 600_000 + bound * 12_000_000) / 1_000_000);
    expect(await usageOf(id)).toMatchObject({
      status: 499,
      counted: 'tokenizer',
      prompt_tokens: prompt,
      completion_tokens: bound,
      cost_micros: cost,
    });
    expect(before - (await balance(a.accountId))).toBe(cost);
  });

  test('an upstream that breaks off mid-answer breaks the answer off (the client sees it), and the characters are paid', async () => {
    const a = await account();
    up.plan({ kind: 'bytes', type: 'audio/mpeg', pieces: [Buffer.from('half of it'), { delayMs: 20 }], cut: true });
    const res = await speak(a.secret, { model: 'tts-1', input: 'Broken' });
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
    await gw.settled();
    expect(await usageOf(res.headers.get('x-request-id'))).toMatchObject({
      status: 502,
      characters: 6,
      cost_micros: 90,
    });
  });
});

describe('what the endpoint takes', () => {
  test('a speech model only, with a key that has the audio scope', async () => {
    const a = await account();
    const chat = await speak(a.secret, { model: 'gpt', input: 'hi' });
    expect(chat.status).toBe(400);
    expect(((await chat.json()) as any).error.code).toBe('model_not_supported');
    const speechOnChat = await a.client.chat.completions
      .create({ model: 'tts-1', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(speechOnChat.status).toBe(400);
    const noScope = await account(10_000_000, { scopes: ['chat'] });
    const res = await speak(noScope.secret, { model: 'tts-1', input: 'hi' });
    expect(res.status).toBe(403);
  });

  test('a voice, a format and a speed of the contract; a custom voice (kept in the provider account) refused', async () => {
    const a = await account();
    const sent = up.requests.length;
    for (const [body, param] of [
      [{ model: 'tts-1', input: 'hi', voice: undefined }, 'voice'],
      [{ model: 'tts-1', input: 'hi', response_format: 'ogg' }, 'response_format'],
      [{ model: 'tts-1', input: 'hi', speed: 5 }, 'speed'],
      [{ model: 'tts-1', input: '' }, 'input'],
      [{ model: 'tts-1', input: 'hi', voice: { id: 'voice_123' } }, 'voice'],
    ] as const) {
      const res = await speak(a.secret, body);
      expect([param, res.status, ((await res.json()) as any).error.param]).toEqual([param, 400, param]);
    }
    expect(up.requests.length).toBe(sent);
  });
});

/** Polls until `ok` (the test's own time limit ends a wait that never comes true). */
async function until(ok: () => Promise<boolean>): Promise<void> {
  while (!(await ok())) await new Promise((r) => setTimeout(r, 10));
}
