// Generated from openapi/openapi.yaml by scripts/generate.ts (`npm run generate`): do not edit.
/** The handler of every operation of the contract, by operationId: src/handlers/<operationId>.ts. */
import { adminCreateOperator } from './adminCreateOperator';
import { adminCreateRedemptionCodes } from './adminCreateRedemptionCodes';
import { adminDeleteCatalogModel } from './adminDeleteCatalogModel';
import { adminDeleteCatalogProvider } from './adminDeleteCatalogProvider';
import { adminDisableAccount } from './adminDisableAccount';
import { adminDisableOperator } from './adminDisableOperator';
import { adminEnableAccount } from './adminEnableAccount';
import { adminFarmingReport } from './adminFarmingReport';
import { adminGetAccount } from './adminGetAccount';
import { adminGetCatalog } from './adminGetCatalog';
import { adminGetUsage } from './adminGetUsage';
import { adminGrantCredits } from './adminGrantCredits';
import { adminListAccounts } from './adminListAccounts';
import { adminListAudit } from './adminListAudit';
import { adminListKeys } from './adminListKeys';
import { adminListOperators } from './adminListOperators';
import { adminListRedemptionCodes } from './adminListRedemptionCodes';
import { adminListUsage } from './adminListUsage';
import { adminOverview } from './adminOverview';
import { adminPutCatalogModel } from './adminPutCatalogModel';
import { adminPutCatalogProvider } from './adminPutCatalogProvider';
import { adminResendConfirmation } from './adminResendConfirmation';
import { adminRevokeFreeCredits } from './adminRevokeFreeCredits';
import { adminSetLowBalanceAlert } from './adminSetLowBalanceAlert';
import { adminSettleDebt } from './adminSettleDebt';
import { adminTestCatalogRoute } from './adminTestCatalogRoute';
import { adminUpdateKey } from './adminUpdateKey';
import { changeOperatorPassword } from './changeOperatorPassword';
import { checkPasswordReset } from './checkPasswordReset';
import { checkPasswordStrength } from './checkPasswordStrength';
import { confirmPasswordReset } from './confirmPasswordReset';
import { confirmTotpEnrolment } from './confirmTotpEnrolment';
import { countMessageTokens } from './countMessageTokens';
import { createChatCompletion } from './createChatCompletion';
import { createCheckout } from './createCheckout';
import { createCompletion } from './createCompletion';
import { createConsoleKey } from './createConsoleKey';
import { createEmbedding } from './createEmbedding';
import { createImage } from './createImage';
import { createImageEdit } from './createImageEdit';
import { createMessage } from './createMessage';
import { createModeration } from './createModeration';
import { createRerank } from './createRerank';
import { createResponse } from './createResponse';
import { createSpeech } from './createSpeech';
import { createTranscription } from './createTranscription';
import { createTranslation } from './createTranslation';
import { deleteConsoleKey } from './deleteConsoleKey';
import { deleteResponse } from './deleteResponse';
import { finishOperatorOidcSignIn } from './finishOperatorOidcSignIn';
import { getAccount } from './getAccount';
import { getConsoleConfig } from './getConsoleConfig';
import { getDailyUsage } from './getDailyUsage';
import { getOperatorSession } from './getOperatorSession';
import { getOperatorSignInMethods } from './getOperatorSignInMethods';
import { getSession } from './getSession';
import { getTopupOptions } from './getTopupOptions';
import { listConsoleKeys } from './listConsoleKeys';
import { listConsoleModels } from './listConsoleModels';
import { listLedger } from './listLedger';
import { listModels } from './listModels';
import { listRefusedCalls } from './listRefusedCalls';
import { listUsage } from './listUsage';
import { login } from './login';
import { logout } from './logout';
import { redeemCode } from './redeemCode';
import { register } from './register';
import { requestPasswordReset } from './requestPasswordReset';
import { resendVerification } from './resendVerification';
import { retrieveModel } from './retrieveModel';
import { retrieveResponse } from './retrieveResponse';
import { signInOperator } from './signInOperator';
import { signOutOperator } from './signOutOperator';
import { startOperatorOidcSignIn } from './startOperatorOidcSignIn';
import { startTotpEnrolment } from './startTotpEnrolment';
import { stripeWebhook } from './stripeWebhook';
import { updateAccount } from './updateAccount';
import { updateConsoleKey } from './updateConsoleKey';
import { verifyEmail } from './verifyEmail';
import type { Handler, OperationId } from './types';

export const handlers: { [Op in OperationId]: Handler<Op> } = {
  createChatCompletion,
  createCompletion,
  createEmbedding,
  createImage,
  createSpeech,
  createTranscription,
  createTranslation,
  createImageEdit,
  createModeration,
  createRerank,
  listModels,
  retrieveModel,
  getConsoleConfig,
  register,
  login,
  verifyEmail,
  resendVerification,
  requestPasswordReset,
  confirmPasswordReset,
  checkPasswordReset,
  checkPasswordStrength,
  logout,
  getSession,
  getAccount,
  updateAccount,
  listConsoleKeys,
  createConsoleKey,
  deleteConsoleKey,
  updateConsoleKey,
  listConsoleModels,
  redeemCode,
  getTopupOptions,
  createCheckout,
  stripeWebhook,
  listUsage,
  getDailyUsage,
  listRefusedCalls,
  listLedger,
  adminListAccounts,
  adminGrantCredits,
  adminFarmingReport,
  adminRevokeFreeCredits,
  adminUpdateKey,
  adminSetLowBalanceAlert,
  adminDisableAccount,
  adminEnableAccount,
  adminListAudit,
  adminListRedemptionCodes,
  adminCreateRedemptionCodes,
  getOperatorSession,
  signInOperator,
  signOutOperator,
  getOperatorSignInMethods,
  startOperatorOidcSignIn,
  finishOperatorOidcSignIn,
  startTotpEnrolment,
  confirmTotpEnrolment,
  adminListOperators,
  adminCreateOperator,
  adminDisableOperator,
  adminGetCatalog,
  adminPutCatalogProvider,
  adminDeleteCatalogProvider,
  adminPutCatalogModel,
  adminDeleteCatalogModel,
  adminTestCatalogRoute,
  createMessage,
  countMessageTokens,
  createResponse,
  retrieveResponse,
  deleteResponse,
  adminOverview,
  adminGetAccount,
  adminSettleDebt,
  adminResendConfirmation,
  adminListKeys,
  adminListUsage,
  adminGetUsage,
  changeOperatorPassword,
};
