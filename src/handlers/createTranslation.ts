import { translations } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/audio/translations (multipart: the audio file). */
export const createTranslation: Handler<'createTranslation'> = ({ app, ...call }) =>
  app.metered.serve(translations, call);
