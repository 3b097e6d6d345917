import { speech } from '../gateway/operations';
import type { Handler } from './types';

/** POST /v1/audio/speech: the audio, streamed as it comes. */
export const createSpeech: Handler<'createSpeech'> = ({ app, ...call }) => app.metered.serve(speech, call);
