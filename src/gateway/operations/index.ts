// Generated from openapi/openapi.yaml by scripts/generate.ts (`npm run generate`): do not edit.
/** The descriptor of every wire a paid operation goes through, by name: src/gateway/operations/<name>.ts. */
import type { OperationName } from '../../contract';
import { chat } from './chat';
import { completions } from './completions';
import { embeddings } from './embeddings';
import { imageEdits } from './imageEdits';
import { images } from './images';
import { messages } from './messages';
import { moderations } from './moderations';
import { rerank } from './rerank';
import { responses } from './responses';
import { speech } from './speech';
import { transcriptions } from './transcriptions';
import { translations } from './translations';
import type { Operation } from './types';

export const OPERATIONS: { [Name in OperationName]: Operation } = { chat, completions, embeddings, images, speech, transcriptions, translations, imageEdits, moderations, rerank, messages, responses };

export { chat, completions, embeddings, images, speech, transcriptions, translations, imageEdits, moderations, rerank, messages, responses };
export type { Operation, OperationName };
