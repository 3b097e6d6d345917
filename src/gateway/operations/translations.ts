/**
 * POST /v1/audio/translations: audio in any language, its English transcript out. Priced, held, sent and written as
 * transcriptions are (transcriptions.ts); only its path and wire differ.
 */
import type { Wire } from '../../contract';
import { transcriptions } from './transcriptions';
import type { Operation } from './types';

type TranslationRequest = Wire['translations']['req'];
type TranslationResponse = Wire['translations']['res'];

export const translations: Operation<TranslationRequest, TranslationResponse, never> = {
  ...(transcriptions as unknown as Operation<TranslationRequest, TranslationResponse, never>),
  name: 'translations',
  path: '/v1/audio/translations',
  upstream: 'translations',
};
