import { imageEdits } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/images/edits (multipart: the images and mask). */
export const createImageEdit: Handler<'createImageEdit'> = ({ app, ...call }) => app.metered.serve(imageEdits, call);
