import { images } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/images/generations */
export const createImage: Handler<'createImage'> = ({ app, ...call }) => app.metered.serve(images, call);
