/**
 * POST /v1/audio/transcriptions and /translations (multipart) through the official `openai` SDK, with WAV files made
 * here: whisper-1 priced per second of audio, gpt-4o-transcribe by the tokens it reports, every response_format, the
 * mock provider. The balance changes by exactly the documented price; a file whose header says 1 s while it holds
 * 10 minutes is held at 10 minutes, and refused before anything is sent when the money covers less. Also: POST
 * /v1/images/edits (images and a mask, as a form). On the database in DATABASE_URL.
 */
import OpenAI, { toFile } from 'openai';
import { FAKE_PNG, FakeOpenAI, FAKE_AUDIO_TOKENS_PER_SECOND, wavSeconds } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { wav } from '../helpers/audio';

let openai: FakeOpenAI;
let gw: TestGateway;

beforeAll(async () => {
  openai = await new FakeOpenAI().start();
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
server: { max_body_bytes: 6000000 }
providers:
  up: { type: openai, base_url: "${openai.url}" }
  local: { type: mock }
models:
  - { id: whisper-1, kind: transcription, price: { audio_seconds: 100 }, routes: [ { provider: up } ] }
  - { id: gpt-4o-transcribe, kind: transcription, price: { input: 6, output: 10 }, routes: [ { provider: up } ] }
  - { id: mock-transcribe, kind: transcription, price: { audio_seconds: 100 }, routes: [ { provider: local } ] }
  - { id: dall-e-2, kind: image, price: { images: { 1024x1024/standard: 0.02 } }, image_tokens: 1000, routes: [ { provider: up } ] }
  - { id: gpt, kind: chat, price: { input: 1, output: 1 }, routes: [ { provider: up } ] }
`,
  );
});

afterAll(async () => {
  await gw?.close();
  await openai?.close();
});

async function account(micros = 10_000_000) {
  const k = await gw.newKey({}, micros);
  const client = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const balance = async () => {
    await gw.settled();
    return Number((await gw.app.db('accounts').where('id', k.accountId).first()).balance_micros);
  };
  return { ...k, client, balance };
}

const record = async (requestId: string) => {
  await gw.settled();
  return gw.app.db('usage_records').where('request_id', requestId).first();
};

describe('the SDK gets its transcript, and the balance changes by exactly the price', () => {
  test('whisper-1, json: 3 s of audio at 0.006 USD a minute is 300 µUSD; the file reaches the upstream intact', async () => {
    const a = await account();
    const audio = wav(3);
    const { data, response } = await a.client.audio.transcriptions
      .create({ file: await toFile(audio, 'hello.wav', { type: 'audio/wav' }), model: 'whisper-1', language: 'en' })
      .withResponse();
    expect(data.text).toBe('Transcript of hello.wav.');
    const sent = openai.last().body;
    expect(sent).toMatchObject({ model: 'whisper-1', language: 'en', response_format: 'json' });
    expect(sent.file).toMatchObject({ filename: 'hello.wav', type: 'audio/wav' });
    expect(Buffer.compare(sent.file.bytes, audio)).toBe(0);
    expect(10_000_000 - (await a.balance())).toBe(300);
    const r = await record(response.headers.get('x-request-id')!);
    expect(r).toMatchObject({ audio_seconds: 3, endpoint: 'transcriptions' });
    expect(Number(r.cost_micros)).toBe(300);
  });

  test.each([
    ['text', 'Transcript of a.wav.\n'],
    ['srt', '1\n00:00:00,000 --> 00:00:01,000\nTranscript of\n\n2\n00:00:01,000 --> 00:00:02,000\na.wav.\n'],
    ['vtt', 'WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nTranscript of\n\n00:00:01.000 --> 00:00:02.000\na.wav.\n'],
  ] as const)(
    'response_format %s: text/plain, written from the JSON the upstream was asked for',
    async (format, expected) => {
      const a = await account();
      const res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.secret}` },
        body: form({ model: 'whisper-1', response_format: format }, wav(2), 'a.wav'),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await res.text()).toBe(expected);
      expect(openai.last().body.response_format).toBe(format === 'text' ? 'json' : 'verbose_json');
      expect(10_000_000 - (await a.balance())).toBe(200);
    },
  );

  test('verbose_json through the SDK: the duration and segments as the upstream sent them', async () => {
    const a = await account();
    const v = await a.client.audio.transcriptions.create({
      file: await toFile(wav(4), 'v.wav'),
      model: 'whisper-1',
      response_format: 'verbose_json',
      timestamp_granularities: ['segment'],
    });
    expect(v).toMatchObject({ duration: 4, language: 'english', text: 'Transcript of v.wav.' });
    expect(v.segments).toHaveLength(2);
    expect(openai.last().body.timestamp_granularities).toEqual(['segment']);
  });

  test('translations: the same price per second, to /audio/translations', async () => {
    const a = await account();
    const t = await a.client.audio.translations.create({ file: await toFile(wav(5), 'hola.wav'), model: 'whisper-1' });
    expect(t.text).toBe('Transcript of hola.wav.');
    expect(openai.last().path).toBe('/v1/audio/translations');
    expect(10_000_000 - (await a.balance())).toBe(500);
  });

  test('gpt-4o-transcribe: the audio and prompt tokens at input, the transcript at output, as reported', async () => {
    const a = await account();
    const { response } = await a.client.audio.transcriptions
      .create({ file: await toFile(wav(6), 'x.wav'), model: 'gpt-4o-transcribe', prompt: 'names' })
      .withResponse();
    const input = 6 * FAKE_AUDIO_TOKENS_PER_SECOND + 3;
    const output = 'Transcript of x.wav (names).'.split(' ').length;
    expect(10_000_000 - (await a.balance())).toBe(input * 6 + output * 10);
    const r = await record(response.headers.get('x-request-id')!);
    expect(r).toMatchObject({ prompt_tokens: input, completion_tokens: output, audio_seconds: 6 });
  });

  test('the mock provider says how long the audio is', async () => {
    const a = await account();
    const t = await a.client.audio.transcriptions.create({
      file: await toFile(wav(7), 'm.wav'),
      model: 'mock-transcribe',
    });
    expect(t.text).toBe('A mock transcript of 7 seconds of m.wav.');
    expect(10_000_000 - (await a.balance())).toBe(700);
  });
});

describe('holds cannot be beaten', () => {
  test('a WAV whose header claims 1 s while it holds 10 minutes is held and charged as 10 minutes', async () => {
    const lying = wav(600, 1);
    expect(wavSeconds(lying)).toBe(600);
    // 1 s costs 100 µUSD, 10 minutes 60,000: an account with 50,000 is refused, and nothing reaches the upstream
    const poor = await account(50_000);
    const before = openai.requests.length;
    const e = await poor.client.audio.transcriptions
      .create({ file: await toFile(lying, 'lie.wav'), model: 'whisper-1' })
      .catch((x: unknown) => x);
    expect(e).toMatchObject({ status: 429, code: 'insufficient_quota' });
    expect(openai.requests.length).toBe(before);
    expect(await poor.balance()).toBe(50_000);
    // one that has the money pays the 10 minutes the upstream transcribed
    const rich = await account(70_000);
    await rich.client.audio.transcriptions.create({ file: await toFile(lying, 'lie.wav'), model: 'whisper-1' });
    expect(70_000 - (await rich.balance())).toBe(60_000);
  });

  test('a file the parser cannot read is held at the most its size could play', async () => {
    const a = await account(20_000);
    const junk = Buffer.alloc(30_000, 7); // 30 kB: 40 s at 6 kbit/s = 4,000 µUSD held
    const before = openai.requests.length;
    await a.client.audio.transcriptions.create({ file: await toFile(junk, 'junk.bin'), model: 'whisper-1' });
    expect(openai.requests.length).toBe(before + 1);
    // the upstream (1 s a kilobyte for what is not a WAV) reports 30 s: charged as reported
    expect(20_000 - (await a.balance())).toBe(3_000);
    const poorer = await account(3_999);
    await expect(
      poorer.client.audio.transcriptions.create({ file: await toFile(junk, 'junk.bin'), model: 'whisper-1' }),
    ).rejects.toMatchObject({ status: 429 });
    expect(openai.requests.length).toBe(before + 1);
  });
});

describe('bad input is a clear 4xx', () => {
  test('JSON to a multipart operation: 415, it must be multipart/form-data', async () => {
    const a = await account();
    const res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'whisper-1', file: 'x' }),
    });
    expect(res.status).toBe(415);
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({
      message: 'Content-Type must be multipart/form-data',
    });
  });

  test('no file: 400 naming it; stream: 400; a file in a text field: 400; a body over the limit: 413', async () => {
    const a = await account();
    const post = (body: FormData) =>
      fetch(`${gw.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.secret}` },
        body,
      });
    const noFile = new FormData();
    noFile.set('model', 'whisper-1');
    const r1 = await post(noFile);
    expect(r1.status).toBe(400);
    expect(JSON.stringify(await r1.json())).toContain('file');
    const r2 = await post(form({ model: 'whisper-1', stream: 'true' }, wav(1), 'a.wav'));
    expect(r2.status).toBe(400);
    expect(((await r2.json()) as { error: { param: string } }).error.param).toBe('stream');
    const asText = new FormData();
    asText.set('model', 'whisper-1');
    asText.set('file', new Blob([wav(1)]), 'a.wav');
    asText.set('prompt', new Blob(['x']), 'p.txt');
    const r3 = await post(asText);
    expect(r3.status).toBe(400);
    expect(((await r3.json()) as { error: { param: string } }).error.param).toBe('prompt');
    const r4 = await post(form({ model: 'whisper-1' }, Buffer.alloc(6_100_000), 'big.wav'));
    expect(r4.status).toBe(413);
    expect(await a.balance()).toBe(10_000_000);
  });

  test('a model that does not transcribe: 400 model_not_found-like, nothing sent', async () => {
    const a = await account();
    const before = openai.requests.length;
    const res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}` },
      body: form({ model: 'gpt' }, wav(1), 'a.wav'),
    });
    expect(res.status).toBe(400);
    expect(openai.requests.length).toBe(before);
  });
});

describe('image edits', () => {
  test('images.edit with two images and a mask: sent as a form, b64_json asked, 2 images at 0.02 USD', async () => {
    const a = await account();
    const png = Buffer.from(FAKE_PNG, 'base64');
    const data = await a.client.images.edit({
      model: 'dall-e-2',
      image: [await toFile(png, 'a.png', { type: 'image/png' }), await toFile(png, 'b.png', { type: 'image/png' })],
      mask: await toFile(png, 'mask.png', { type: 'image/png' }),
      prompt: 'Add a hat',
      n: 2,
      size: '1024x1024',
    });
    expect(data.data).toHaveLength(2);
    expect(data.data![0].b64_json).toBe(FAKE_PNG);
    const sent = openai.last();
    expect(sent.path).toBe('/v1/images/edits');
    expect(sent.body).toMatchObject({ model: 'dall-e-2', prompt: 'Add a hat', n: '2', response_format: 'b64_json' });
    expect(sent.body.image.map((f: { filename: string }) => f.filename)).toEqual(['a.png', 'b.png']);
    expect(Buffer.compare(sent.body.mask.bytes, png)).toBe(0);
    expect(10_000_000 - (await a.balance())).toBe(40_000);
  });

  test('response_format url is refused before anything is sent', async () => {
    const a = await account();
    const before = openai.requests.length;
    const png = Buffer.from(FAKE_PNG, 'base64');
    await expect(
      a.client.images.edit({
        model: 'dall-e-2',
        image: await toFile(png, 'a.png'),
        prompt: 'x',
        response_format: 'url',
      }),
    ).rejects.toMatchObject({ status: 400, param: 'response_format' });
    expect(openai.requests.length).toBe(before);
  });
});

/** A multipart body with these text fields and one file. */
function form(fields: Record<string, string>, file: Buffer, name: string): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.set(k, v);
  f.set('file', new Blob([file], { type: 'audio/wav' }), name);
  return f;
}
