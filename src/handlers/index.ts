/** Every operation of the contract, by operationId. The server refuses to start if one is missing. */
import { createChatCompletion } from './createChatCompletion';
import { createCompletion } from './createCompletion';
import { createEmbedding } from './createEmbedding';
import { listModels } from './listModels';
import { retrieveModel } from './retrieveModel';
import type { Handler, OperationId } from './types';

export const handlers: { [Op in OperationId]: Handler<Op> } = {
  createChatCompletion,
  createCompletion,
  createEmbedding,
  listModels,
  retrieveModel,
};
