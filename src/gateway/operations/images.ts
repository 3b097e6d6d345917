/**
 * POST /v1/images/generations: images from a prompt, always answered as base64 (`b64_json`): the gateway hosts no
 * images, and an upstream's URL would point at the operator's upstream account and expire within the hour.
 *
 * Priced per image by its grade — its size and quality, from the model's `price.images` table (DALL·E) — and by the
 * tokens the upstream reports (the GPT image models: the prompt at `input`, the image tokens at `output`), or both.
 * What `n` images may cost is known before anything is sent: `n` at the dearest grade the request allows (the
 * dearest the model is sold at when `size` or `quality` is left out or `auto`), each with the most output tokens an
 * image of that grade costs (`image_output_tokens`). The upstream takes no output limit, so a request the money does
 * not cover is refused rather than shortened.
 */
import { GRADE, type ModelConfig } from '../../config';
import { errors } from '../../errors';
import { isCount, usage, type Usage } from '../../usage';
import type { ImageRequest, ImagesResponse } from '../types';
import { standardTier } from './policy';
import type { Operation, Output, Reader } from './types';

interface Grade {
  grade: string;
  size: string;
  quality: string;
}

const grades = new WeakMap<ModelConfig, Grade[]>();

/** The grades a model is sold at: the keys of its prices per image and of its output bounds per image. */
export function gradesOf(model: ModelConfig): Grade[] {
  let out = grades.get(model);
  if (!out) {
    const keys = [
      ...Object.values(model.price.grades ?? {}).flatMap((t) => Object.keys(t ?? {})),
      ...Object.keys(model.image_output_tokens ?? {}),
    ];
    out = [...new Set(keys)].map((grade) => {
      const [, size, quality] = GRADE.exec(grade)!;
      return { grade, size, quality };
    });
    grades.set(model, out);
  }
  return out;
}

/** A size or quality the request chose; null when it left the choice to the upstream (left out, or `auto`). */
const chosen = (v: string | null | undefined): string | null => (v && v !== 'auto' ? v : null);

const listed = (xs: string[]) => [...new Set(xs)].join(', ');

/**
 * The grades the request allows: those of its size and quality, every grade the model is sold at for what it leaves
 * to the upstream. A size or quality the model is not sold at is refused (400): nothing would say what it costs.
 */
export function allowedGrades(body: Pick<ImageRequest, 'size' | 'quality'>, model: ModelConfig): string[] {
  const all = gradesOf(model);
  const size = chosen(body.size);
  const quality = chosen(body.quality);
  if (size && !all.some((g) => g.size === size))
    throw errors.invalidRequest(
      `Model ${model.id} is not sold at size ${size}: ask for ${listed(all.map((g) => g.size))} or auto`,
      'size',
    );
  if (quality && !all.some((g) => g.quality === quality))
    throw errors.invalidRequest(
      `Model ${model.id} is not sold in ${quality} quality: ask for ${listed(all.map((g) => g.quality))} or auto`,
      'quality',
    );
  const fit = all.filter((g) => (!size || g.size === size) && (!quality || g.quality === quality));
  if (!fit.length)
    throw errors.invalidRequest(
      `Model ${model.id} is not sold at ${size} in ${quality} quality: ask for ${listed(all.map((g) => g.grade))}`,
      'quality',
    );
  return fit.map((g) => g.grade);
}

/** The GPT image models' usage: the prompt (text and images) and the image tokens generated. */
export function imageUsage(u: ImagesResponse['usage']): Usage | null {
  if (!u || !isCount(u.input_tokens) || !isCount(u.output_tokens)) return null;
  return usage(u.input_tokens, u.output_tokens);
}

const reader: Reader<ImageRequest, ImagesResponse, never> = {
  usage: (res) => imageUsage(res.usage),
  chunkUsage: (_chunk, previous) => previous,
  prompt: (body) => ({ kind: 'text', text: body.prompt }),
  // Image tokens are no text: an upstream that reports none is charged its images and its prompt only.
  answerText: () => '',
  chunkText: () => '',
  units: (res) => ({ images: res.data.length }),
  grade(res, body) {
    const size = chosen(res.size) ?? chosen(body.size);
    const quality = chosen(res.quality) ?? chosen(body.quality);
    return size && quality ? `${size}/${quality}` : null;
  },
};

/**
 * What may go upstream: not a stream (partial images cost 100 output tokens each, and the answer would be events the
 * gateway does not serve), not a URL (the gateway hosts no images), a size and quality the model is sold at, the
 * standard service tier.
 */
function features(body: ImageRequest, model: ModelConfig): ImageRequest {
  if (body.stream)
    throw errors.invalidRequest('Images are not streamed through this gateway: leave out stream', 'stream');
  if (body.response_format === 'url')
    throw errors.invalidRequest(
      "response_format 'url' is not served: this gateway answers images as b64_json (it hosts no images); ask for b64_json or leave response_format out",
      'response_format',
    );
  allowedGrades(body, model);
  type Sent = ImageRequest & { service_tier?: unknown; partial_images?: unknown };
  const { partial_images: _streamed, ...rest } = standardTier<Sent>(body, model);
  return rest;
}

export const images: Operation<ImageRequest, ImagesResponse, never> = {
  name: 'images',
  path: '/v1/images/generations',
  upstream: 'images',
  reader,
  streams: () => false,
  includeUsage: () => false,
  output(body, model): Output {
    const n = body.n ?? 1;
    const allowed = allowedGrades(body, model);
    const tokens = model.image_output_tokens ?? {};
    const perImage = Math.max(0, ...allowed.map((g) => tokens[g] ?? 0));
    return { perChoice: perImage, choices: n, others: { images: n }, grades: allowed, lowerable: false };
  },
  features,
  // The upstream's usage is shown as it reported it (the GPT image models); DALL·E reports none.
  present: (res) => res,
  presentChunk: () => null,
  tail: () => [],
  framing: { frame: () => '', done: '', error: () => '' },
};
