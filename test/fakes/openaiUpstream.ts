/**
 * A fake OpenAI-compatible upstream on loopback: real HTTP, real SSE framing, byte for byte as OpenAI sends it
 * (`data: {json}\n\n` ... `data: [DONE]\n\n`, `usage: null` on each chunk when include_usage is on).
 * Tests script its answers with `plan`, and read what it received from `requests`.
 */
import { FakeUpstream, type Plan, type Received } from './fakeUpstream';

export type { Plan, Received };

/**
 * How slow the default answers are, like a real model's: a JSON answer comes `latencyMs` after the request, and each
 * event of a stream `chunkDelayMs` after the one before (so a test can kill or stop a gateway mid-stream).
 */
export interface Pace {
  latencyMs?: number;
  chunkDelayMs?: number;
}

export class FakeOpenAI extends FakeUpstream {
  constructor(pace: Pace = {}) {
    super({
      base: '/v1',
      keepAliveMs: 5000,
      defaultPlan: (r) => paced(defaultPlan(r), pace),
      frame: (ev) => `data: ${JSON.stringify(ev)}\n\n`,
      end: 'data: [DONE]\n\n',
    });
  }
}

const CREATED = 1_735_689_600;

function paced(plan: Plan, { latencyMs = 0, chunkDelayMs = 0 }: Pace): Plan {
  if (plan.kind === 'json' && latencyMs > 0)
    return { ...plan, wait: new Promise((r) => setTimeout(r, latencyMs)).then(() => plan.wait) };
  if (plan.kind === 'sse' && chunkDelayMs > 0) return { ...plan, delayMs: chunkDelayMs };
  return plan;
}

function lastUserText(body: any): string {
  const m = [...(body.messages ?? [])].reverse().find((x: any) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
}

/** What the fake answers by default: the user's words echoed back, with usage counted as words. */
export function defaultPlan(r: Received): Plan {
  const body = r.body ?? {};
  const model = body.model;
  if (r.path.endsWith('/chat/completions')) {
    const text = `Echo: ${lastUserText(body)}`;
    const usage = {
      prompt_tokens: 10,
      completion_tokens: text.split(' ').length,
      total_tokens: 10 + text.split(' ').length,
    };
    if (!body.stream) {
      return {
        kind: 'json',
        body: {
          id: 'chatcmpl-fake1',
          object: 'chat.completion',
          created: CREATED,
          model,
          system_fingerprint: 'fp_fake',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: text, refusal: null, annotations: [] },
              logprobs: null,
              finish_reason: 'stop',
            },
          ],
          usage: {
            ...usage,
            prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
            completion_tokens_details: {
              reasoning_tokens: 0,
              audio_tokens: 0,
              accepted_prediction_tokens: 0,
              rejected_prediction_tokens: 0,
            },
          },
        },
      };
    }
    return {
      kind: 'sse',
      events: chatStreamEvents(model, text.split(/(?= )/), body.stream_options?.include_usage === true, usage),
    };
  }
  if (r.path.endsWith('/completions')) {
    const text = ` and then: ${body.prompt}`;
    const usage = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };
    if (!body.stream) {
      return {
        kind: 'json',
        body: {
          id: 'cmpl-fake1',
          object: 'text_completion',
          created: CREATED,
          model,
          choices: [{ text, index: 0, logprobs: null, finish_reason: 'stop' }],
          usage,
        },
      };
    }
    const events: unknown[] = text.split(/(?= )/).map((t, i, all) => ({
      id: 'cmpl-fake1',
      object: 'text_completion',
      created: CREATED,
      model,
      choices: [{ text: t, index: 0, logprobs: null, finish_reason: i === all.length - 1 ? 'stop' : null }],
    }));
    if (body.stream_options?.include_usage)
      events.push({ id: 'cmpl-fake1', object: 'text_completion', created: CREATED, model, choices: [], usage });
    return { kind: 'sse', events };
  }
  if (r.path.endsWith('/responses')) return responsesPlan(body);
  if (r.path.endsWith('/images/generations')) return imagesPlan(body);
  if (r.path.endsWith('/audio/speech')) return speechPlan(body);
  if (r.path.endsWith('/audio/transcriptions') || r.path.endsWith('/audio/translations')) return transcriptPlan(body);
  if (r.path.endsWith('/images/edits')) return imagesPlan({ ...body, n: body.n === undefined ? 1 : Number(body.n) });
  if (r.path.endsWith('/embeddings')) {
    const inputs: unknown[] =
      typeof body.input === 'string' || typeof body.input?.[0] === 'number' ? [body.input] : body.input;
    const data = inputs.map((_x, index) => {
      const v = [0.5, -0.25, index + 0.125];
      if (body.encoding_format === 'base64') {
        const b = Buffer.alloc(12);
        v.forEach((x, i) => b.writeFloatLE(x, i * 4));
        return { object: 'embedding', index, embedding: b.toString('base64') };
      }
      return { object: 'embedding', index, embedding: v };
    });
    return {
      kind: 'json',
      body: {
        object: 'list',
        data,
        model,
        usage: { prompt_tokens: inputs.length * 2, total_tokens: inputs.length * 2 },
      },
    };
  }
  if (r.path.endsWith('/moderations')) return { kind: 'json', body: moderation(body) };
  if (r.path.endsWith('/rerank')) return { kind: 'json', body: rerankAnswer(body) };
  return {
    kind: 'json',
    status: 404,
    body: { error: { message: 'Unknown path', type: 'invalid_request_error', param: null, code: 'unknown_url' } },
  };
}

/** OpenAI's moderation answer (no usage: OpenAI reports none): a string that says "kill" is flagged for violence. */
export function moderation(body: any): object {
  const inputs: unknown[] = typeof body.input === 'string' ? [body.input] : body.input;
  const texts = inputs.every((x) => typeof x === 'string') ? (inputs as string[]) : [JSON.stringify(inputs)];
  return {
    id: 'modr-fake1',
    model: body.model,
    results: texts.map((t) => {
      const violent = /kill/i.test(t);
      return {
        flagged: violent,
        categories: { harassment: false, violence: violent },
        category_scores: { harassment: 0.0001, violence: violent ? 0.99 : 0.0002 },
        category_applied_input_types: { harassment: ['text'], violence: ['text'] },
      };
    }),
  };
}

/**
 * vLLM's rerank answer: every document, in reverse order of position (the last is the most relevant), each with its
 * document; usage as vLLM counts it, here 10 tokens for each (query, document) pair.
 */
export function rerankAnswer(body: any): object {
  const docs: unknown[] = body.documents;
  const results = docs
    .map((d, index) => ({
      index,
      document: { text: typeof d === 'string' ? d : (d as { text: string }).text },
      relevance_score: (index + 1) / docs.length,
    }))
    .reverse()
    .slice(0, body.top_n ?? docs.length);
  return { id: 'rerank-fake1', model: body.model, usage: { total_tokens: 10 * docs.length }, results };
}

/** The chunks OpenAI sends for a text answer: role, content pieces, finish, and (if asked) the usage chunk. */
export function chatStreamEvents(
  model: string,
  pieces: string[],
  includeUsage: boolean,
  usage: object,
  finish = 'stop',
): unknown[] {
  const base = {
    id: 'chatcmpl-fake1',
    object: 'chat.completion.chunk',
    created: CREATED,
    model,
    system_fingerprint: 'fp_fake',
  };
  const u = includeUsage ? { usage: null } : {};
  const events: unknown[] = [
    {
      ...base,
      choices: [
        { index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null },
      ],
      ...u,
    },
    ...pieces.map((p) => ({
      ...base,
      choices: [{ index: 0, delta: { content: p }, logprobs: null, finish_reason: null }],
      ...u,
    })),
    { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: finish }], ...u },
  ];
  if (includeUsage) events.push({ ...base, choices: [], usage });
  return events;
}

/** Responses stream events are framed with their type, `event: <type>\ndata: <json>\n\n`, and no [DONE]. */
export const responseFrame = (ev: { type: string }) => `event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`;

/** A Responses answer as OpenAI gives it: the user's last words echoed back in one message item. */
export function responseObject(
  body: any,
  text: string,
  usage = {
    input_tokens: 12,
    input_tokens_details: { cached_tokens: 4 },
    output_tokens: 6,
    output_tokens_details: { reasoning_tokens: 2 },
    total_tokens: 18,
  },
) {
  return {
    id: 'resp_fake1',
    object: 'response',
    created_at: CREATED,
    status: 'completed',
    model: body.model,
    output: [
      {
        type: 'message',
        id: 'msg_fake1',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text, annotations: [] }],
      },
    ],
    usage,
    error: null,
    incomplete_details: null,
    store: body.store ?? true,
  };
}

/** The typed events of a Responses stream for a one-message answer, each with its sequence_number. */
export function responseEvents(res: ReturnType<typeof responseObject>): { type: string; [k: string]: unknown }[] {
  const item = res.output[0];
  const text = item.content[0].text;
  const shell = { ...res, status: 'in_progress', output: [], usage: null };
  const evs: { type: string; [k: string]: unknown }[] = [
    { type: 'response.created', response: shell },
    { type: 'response.in_progress', response: shell },
    { type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
    {
      type: 'response.content_part.added',
      item_id: item.id,
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    },
    ...text.split(/(?= )/).map((delta) => ({
      type: 'response.output_text.delta',
      item_id: item.id,
      output_index: 0,
      content_index: 0,
      delta,
      logprobs: [],
    })),
    { type: 'response.output_text.done', item_id: item.id, output_index: 0, content_index: 0, text, logprobs: [] },
    { type: 'response.content_part.done', item_id: item.id, output_index: 0, content_index: 0, part: item.content[0] },
    { type: 'response.output_item.done', output_index: 0, item },
    { type: 'response.completed', response: res },
  ];
  return evs.map((e, sequence_number) => ({ ...e, sequence_number }));
}

function lastInputText(body: any): string {
  if (typeof body.input === 'string') return body.input;
  const m = [...(body.input ?? [])].reverse().find((x: any) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : (m?.content ?? []).map((p: any) => p.text ?? '').join('');
}

function responsesPlan(body: any): Plan {
  const res = responseObject(body, `Echo: ${lastInputText(body)}`);
  if (!body.stream) return { kind: 'json', body: res };
  return { kind: 'sse', events: responseEvents(res).map(responseFrame), done: false };
}

/** A valid 1×1 PNG, base64: the image every fake generation answers. */
export const FAKE_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mPwrzn5HwAFRgKU6ZW+jgAAAABJRU5ErkJggg==';

/** The output tokens of one gpt-image-1 image, by size and quality (OpenAI's table). */
export const GPT_IMAGE_TOKENS: Record<string, number> = {
  '1024x1024/low': 272,
  '1024x1024/medium': 1056,
  '1024x1024/high': 4160,
  '1536x1024/low': 408,
  '1536x1024/medium': 1584,
  '1536x1024/high': 6240,
  '1024x1536/low': 408,
  '1024x1536/medium': 1584,
  '1024x1536/high': 6240,
};

/**
 * Images as OpenAI makes them. The GPT image models answer base64 with the size and quality they chose and their
 * token usage, and refuse `response_format`; DALL·E answers URLs unless asked for b64_json, and reports no usage.
 */
export function imagesPlan(body: any): Plan {
  const n = body.n ?? 1;
  if (/^gpt-image/.test(body.model)) {
    if ('response_format' in body)
      return {
        kind: 'json',
        status: 400,
        body: {
          error: {
            message: "Unknown parameter: 'response_format'.",
            type: 'invalid_request_error',
            param: 'response_format',
            code: 'unknown_parameter',
          },
        },
      };
    const size = !body.size || body.size === 'auto' ? '1024x1024' : body.size;
    const quality = !body.quality || body.quality === 'auto' ? 'medium' : body.quality;
    const input = String(body.prompt).split(' ').length;
    const output = n * GPT_IMAGE_TOKENS[`${size}/${quality}`];
    return {
      kind: 'json',
      body: {
        created: CREATED,
        data: Array.from({ length: n }, () => ({ b64_json: FAKE_PNG })),
        background: 'opaque',
        output_format: 'png',
        size,
        quality,
        usage: {
          input_tokens: input,
          input_tokens_details: { text_tokens: input, image_tokens: 0 },
          output_tokens: output,
          total_tokens: input + output,
        },
      },
    };
  }
  const image = (i: number) =>
    body.response_format === 'b64_json'
      ? { b64_json: FAKE_PNG, revised_prompt: `Revised: ${body.prompt}` }
      : { url: `https://images.example/img-${i}.png?sig=secret`, revised_prompt: `Revised: ${body.prompt}` };
  return { kind: 'json', body: { created: CREATED, data: Array.from({ length: n }, (_x, i) => image(i)) } };
}

/** The media type of each speech format, as OpenAI sends it. */
export const SPEECH_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** The fake's audio for a speech request: bytes that say what they are (a test compares them byte for byte). */
export const speechAudio = (body: any) => Buffer.from(`FAKE-AUDIO ${body.response_format ?? 'mp3'}: ${body.input}`);

/** The usage the fake reports at the end of a speech stream of events. */
export const SPEECH_USAGE = { input_tokens: 7, output_tokens: 50, total_tokens: 57 };

/** Speech events as OpenAI sends them (`stream_format: sse`): the audio in base64 pieces, then the usage. */
export function speechEvents(audio: Buffer, usage: object = SPEECH_USAGE): unknown[] {
  const half = Math.ceil(audio.length / 2);
  return [
    ...[audio.subarray(0, half), audio.subarray(half)].map((a) => ({
      type: 'speech.audio.delta',
      audio: a.toString('base64'),
    })),
    { type: 'speech.audio.done', usage },
  ];
}

/** Speech: the audio as bytes in two pieces, or (`stream_format: sse`) as events; tts-1 takes no events (OpenAI's). */
function speechPlan(body: any): Plan {
  const audio = speechAudio(body);
  if (body.stream_format !== 'sse')
    return {
      kind: 'bytes',
      type: SPEECH_TYPES[body.response_format ?? 'mp3'],
      pieces: [audio.subarray(0, 4), audio.subarray(4)],
    };
  if (/^tts-1/.test(body.model))
    return {
      kind: 'json',
      status: 400,
      body: {
        error: {
          message: 'sse is not supported for tts-1',
          type: 'invalid_request_error',
          param: 'stream_format',
          code: null,
        },
      },
    };
  return { kind: 'sse', events: speechEvents(audio), done: false };
}

/** Audio tokens a second of audio costs at the fake's gpt-4o-transcribe (OpenAI's rate is about 10). */
export const FAKE_AUDIO_TOKENS_PER_SECOND = 10;

/**
 * Seconds of audio in a WAV as a decoder finds them: the bytes after the header at the rate its format chunk says,
 * whatever its data chunk claims; anything else: 1 second a kilobyte.
 */
export function wavSeconds(bytes: Buffer): number {
  if (bytes.subarray(0, 4).toString() !== 'RIFF' || bytes.subarray(8, 12).toString() !== 'WAVE')
    return Math.ceil(bytes.length / 1000);
  return (bytes.length - 44) / bytes.readUInt32LE(28);
}

/**
 * Like OpenAI: whisper-1 reports the seconds it transcribed (`usage.type: duration`), the gpt-4o transcribe models
 * the tokens; `verbose_json` adds the language, the duration and timed segments; `text`, `srt` and `vtt` answer
 * text (the gateway never asks for them).
 */
function transcriptPlan(body: any): Plan {
  const seconds = wavSeconds(body.file.bytes);
  const text = `Transcript of ${body.file.filename}${body.prompt ? ` (${body.prompt})` : ''}.`;
  const usage = /^whisper/.test(body.model)
    ? { type: 'duration', seconds: Math.ceil(seconds) }
    : {
        type: 'tokens',
        input_tokens: Math.ceil(seconds * FAKE_AUDIO_TOKENS_PER_SECOND) + 3,
        input_token_details: { text_tokens: 3, audio_tokens: Math.ceil(seconds * FAKE_AUDIO_TOKENS_PER_SECOND) },
        output_tokens: text.split(' ').length,
        total_tokens: Math.ceil(seconds * FAKE_AUDIO_TOKENS_PER_SECOND) + 3 + text.split(' ').length,
      };
  const format = body.response_format ?? 'json';
  if (format === 'json') return { kind: 'json', body: { text, usage } };
  if (format === 'verbose_json') {
    const half = seconds / 2;
    const segments = [
      { id: 0, seek: 0, start: 0, end: half, text: ' Transcript of', tokens: [1], temperature: 0 },
      {
        id: 1,
        seek: 0,
        start: half,
        end: seconds,
        text: ` ${text.slice('Transcript of '.length)}`,
        tokens: [2],
        temperature: 0,
      },
    ];
    return {
      kind: 'json',
      body: { task: 'transcribe', language: 'english', duration: seconds, text, segments, usage },
    };
  }
  return { kind: 'bytes', type: 'text/plain; charset=utf-8', pieces: [Buffer.from(`${text}\n`)] };
}
