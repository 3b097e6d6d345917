/**
 * POST /v1/images/edits: images (and a mask) with a prompt in, edited images out, as base64. Priced, held, checked
 * and read as generations are (images.ts): `n` images at the dearest grade the request allows; the input images are
 * part of the prompt, each bounded at the model's `image_tokens` (the form's profile counts them: bound.ts).
 */
import type { Wire } from '../../contract';
import { errors } from '../../errors';
import { isUpload } from '../providers/form';
import { images } from './images';
import type { Operation } from './types';

type EditRequest = Wire['imageEdits']['req'];
type EditResponse = Wire['imageEdits']['res'];

const generations = images as unknown as Operation<EditRequest, EditResponse, never>;

export const imageEdits: Operation<EditRequest, EditResponse, never> = {
  ...generations,
  // The contract's validator leaves files out of `required` (openapi-backend removes binary fields from it).
  features(body, model, profile) {
    const given = [body.image].flat();
    if (!given.length || !given.every(isUpload))
      throw errors.invalidRequest('image is required: the image(s) to edit, as files of the form', 'image');
    return generations.features(body, model, profile);
  },
  name: 'imageEdits',
  path: '/v1/images/edits',
  upstream: 'imageEdits',
};
