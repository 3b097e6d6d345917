/** Every operation the gateway meters, by name (an endpoint is the contract, one file here and one handler). */
import { chat } from './chat';
import { completions } from './completions';
import { embeddings } from './embeddings';
import { messages } from './messages';
import { responses } from './responses';
import type { Operation, OperationName } from './types';

export const OPERATIONS: Record<OperationName, Operation> = { chat, completions, embeddings, messages, responses };

export { chat, completions, embeddings, messages, responses };
export type { Operation, OperationName };
