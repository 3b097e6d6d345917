/** Every operation of the contract, by operationId. The server refuses to start if one is missing. */
import { adminCreateRedemptionCodes } from './adminCreateRedemptionCodes';
import { adminDisableAccount } from './adminDisableAccount';
import { adminEnableAccount } from './adminEnableAccount';
import { adminGrantCredits } from './adminGrantCredits';
import { adminListAccounts } from './adminListAccounts';
import { createChatCompletion } from './createChatCompletion';
import { createCheckout } from './createCheckout';
import { createCompletion } from './createCompletion';
import { createConsoleKey } from './createConsoleKey';
import { createEmbedding } from './createEmbedding';
import { createMessage } from './createMessage';
import { countMessageTokens } from './countMessageTokens';
import { createResponse } from './createResponse';
import { deleteResponse } from './deleteResponse';
import { retrieveResponse } from './retrieveResponse';
import { deleteConsoleKey } from './deleteConsoleKey';
import { getAccount } from './getAccount';
import { getDailyUsage } from './getDailyUsage';
import { getSession } from './getSession';
import { getTopupOptions } from './getTopupOptions';
import { listConsoleKeys } from './listConsoleKeys';
import { listConsoleModels } from './listConsoleModels';
import { listLedger } from './listLedger';
import { listModels } from './listModels';
import { listUsage } from './listUsage';
import { login } from './login';
import { logout } from './logout';
import { redeemCode } from './redeemCode';
import { register } from './register';
import { confirmPasswordReset } from './confirmPasswordReset';
import { requestPasswordReset } from './requestPasswordReset';
import { resendVerification } from './resendVerification';
import { verifyEmail } from './verifyEmail';
import { updateAccount } from './updateAccount';
import { getConsoleConfig } from './getConsoleConfig';
import { adminSetLowBalanceAlert } from './adminSetLowBalanceAlert';
import { adminUpdateKey } from './adminUpdateKey';
import { adminFarmingReport } from './adminFarmingReport';
import { adminRevokeFreeCredits } from './adminRevokeFreeCredits';
import { retrieveModel } from './retrieveModel';
import { stripeWebhook } from './stripeWebhook';
import { updateConsoleKey } from './updateConsoleKey';
import type { Handler, OperationId } from './types';

export const handlers: { [Op in OperationId]: Handler<Op> } = {
  // /v1
  createChatCompletion,
  createCompletion,
  createEmbedding,
  listModels,
  retrieveModel,
  createMessage,
  countMessageTokens,
  createResponse,
  retrieveResponse,
  deleteResponse,
  // console
  getConsoleConfig,
  register,
  verifyEmail,
  resendVerification,
  requestPasswordReset,
  confirmPasswordReset,
  login,
  logout,
  getSession,
  getAccount,
  updateAccount,
  listConsoleKeys,
  createConsoleKey,
  updateConsoleKey,
  deleteConsoleKey,
  listConsoleModels,
  redeemCode,
  getTopupOptions,
  createCheckout,
  stripeWebhook,
  listUsage,
  getDailyUsage,
  listLedger,
  // admin
  adminListAccounts,
  adminGrantCredits,
  adminDisableAccount,
  adminEnableAccount,
  adminCreateRedemptionCodes,
  adminFarmingReport,
  adminRevokeFreeCredits,
  adminUpdateKey,
  adminSetLowBalanceAlert,
};
