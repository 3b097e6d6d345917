import { transcriptions } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/audio/transcriptions (multipart: the audio file). */
export const createTranscription: Handler<'createTranscription'> = ({ app, ...call }) =>
  app.metered.serve(transcriptions, call);
