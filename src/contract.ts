// Generated from openapi/openapi.yaml by scripts/generate.ts (`npm run generate`): do not edit.
/**
 * What the contract says that the code needs as values, with exact types: the key scopes, the model kinds, who may
 * call each operation and what is checked before its body is read (its `security` and `x-switchyard`), and the
 * upstream operations (wires) that operations go through. See the comment above `paths:` in openapi/openapi.yaml.
 */
import type { components, operations } from '../generated/openapi';

/** The sha-256 of the contract these tables come from: the server refuses to start on another (http/api.ts). */
export const CONTRACT_SHA256 = 'fc29b536d9cc2f352fb4a1dd5e7a9f907e54442a4ca62e83826d1ec3215f1401';

/** The scopes an API key may have (KeyScope). */
export const SCOPES = ['chat', 'completions', 'embeddings', 'models', 'messages', 'responses', 'images', 'audio', 'moderations', 'rerank'] as const;
export type Scope = (typeof SCOPES)[number];

/** What each scope lets a key call, as people read it (KeyScope's x-enumDescriptions). */
export const SCOPE_LABELS: { readonly [S in Scope]: string } = {
  chat: 'Chat completions',
  completions: 'Completions (legacy)',
  embeddings: 'Embeddings',
  models: 'List models',
  messages: 'Messages (Anthropic; Claude Code)',
  responses: 'Responses (Codex)',
  images: 'Image generation',
  audio: 'Audio (speech)',
  moderations: 'Moderations',
  rerank: 'Rerank',
};

/** The kinds of model (ModelKind). */
export const MODEL_KINDS = ['chat', 'completion', 'embedding', 'image', 'speech', 'transcription', 'moderation', 'rerank'] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];

/** The operators' roles (OperatorRole), most powerful first: a role may do what any role after it may. */
export const OPERATOR_ROLES = ['owner', 'admin', 'support', 'viewer'] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

/**
 * What is checked of an API key before the body is read, besides its scope: `paid` and `metered`, its requests per
 * minute and money (a paid call is then held for and charged); `counted`, its requests per minute; `none`, nothing.
 */
export type Meter = 'paid' | 'metered' | 'counted' | 'none';

/**
 * Who may call an operation: an API key with a scope (`anthropicKey`: also sent as x-api-key), a console session
 * (`csrf`: with the CSRF header too), the admin token or an operator's session of at least `role` (`csrf`: the
 * session with the CSRF header), an operator's session whatever its role, or anyone.
 */
export type Endpoint =
  | { caller: 'key'; scope: Scope; anthropicKey: boolean; meter: Meter; wire?: UpstreamOp }
  | { caller: 'session'; csrf: boolean }
  | { caller: 'admin'; role: OperatorRole; csrf: boolean }
  | { caller: 'operator'; csrf: boolean }
  | { caller: 'public' };

/** Every operation of the contract, by operationId. */
export const ENDPOINTS = {
  createChatCompletion: { caller: 'key', scope: 'chat', anthropicKey: false, meter: 'paid', wire: 'chat' },
  createCompletion: { caller: 'key', scope: 'completions', anthropicKey: false, meter: 'paid', wire: 'completions' },
  createEmbedding: { caller: 'key', scope: 'embeddings', anthropicKey: false, meter: 'paid', wire: 'embeddings' },
  createImage: { caller: 'key', scope: 'images', anthropicKey: false, meter: 'paid', wire: 'images' },
  createSpeech: { caller: 'key', scope: 'audio', anthropicKey: false, meter: 'paid', wire: 'speech' },
  createTranscription: { caller: 'key', scope: 'audio', anthropicKey: false, meter: 'paid', wire: 'transcriptions' },
  createTranslation: { caller: 'key', scope: 'audio', anthropicKey: false, meter: 'paid', wire: 'translations' },
  createImageEdit: { caller: 'key', scope: 'images', anthropicKey: false, meter: 'paid', wire: 'imageEdits' },
  createModeration: { caller: 'key', scope: 'moderations', anthropicKey: false, meter: 'paid', wire: 'moderations' },
  createRerank: { caller: 'key', scope: 'rerank', anthropicKey: false, meter: 'paid', wire: 'rerank' },
  listModels: { caller: 'key', scope: 'models', anthropicKey: false, meter: 'none' },
  retrieveModel: { caller: 'key', scope: 'models', anthropicKey: false, meter: 'none' },
  getConsoleConfig: { caller: 'public' },
  register: { caller: 'public' },
  login: { caller: 'public' },
  verifyEmail: { caller: 'public' },
  resendVerification: { caller: 'session', csrf: true },
  requestPasswordReset: { caller: 'public' },
  confirmPasswordReset: { caller: 'public' },
  checkPasswordReset: { caller: 'public' },
  checkPasswordStrength: { caller: 'public' },
  logout: { caller: 'session', csrf: true },
  getSession: { caller: 'session', csrf: false },
  getAccount: { caller: 'session', csrf: false },
  updateAccount: { caller: 'session', csrf: true },
  listConsoleKeys: { caller: 'session', csrf: false },
  createConsoleKey: { caller: 'session', csrf: true },
  deleteConsoleKey: { caller: 'session', csrf: true },
  updateConsoleKey: { caller: 'session', csrf: true },
  listConsoleModels: { caller: 'session', csrf: false },
  redeemCode: { caller: 'session', csrf: true },
  getTopupOptions: { caller: 'session', csrf: false },
  createCheckout: { caller: 'session', csrf: true },
  stripeWebhook: { caller: 'public' },
  listUsage: { caller: 'session', csrf: false },
  getDailyUsage: { caller: 'session', csrf: false },
  listRefusedCalls: { caller: 'session', csrf: false },
  listLedger: { caller: 'session', csrf: false },
  adminListAccounts: { caller: 'admin', role: 'viewer', csrf: false },
  adminGrantCredits: { caller: 'admin', role: 'support', csrf: true },
  adminFarmingReport: { caller: 'admin', role: 'viewer', csrf: false },
  adminRevokeFreeCredits: { caller: 'admin', role: 'support', csrf: true },
  adminUpdateKey: { caller: 'admin', role: 'support', csrf: true },
  adminSetLowBalanceAlert: { caller: 'admin', role: 'support', csrf: true },
  adminDisableAccount: { caller: 'admin', role: 'support', csrf: true },
  adminEnableAccount: { caller: 'admin', role: 'support', csrf: true },
  adminListAudit: { caller: 'admin', role: 'viewer', csrf: false },
  adminListRedemptionCodes: { caller: 'admin', role: 'viewer', csrf: false },
  adminCreateRedemptionCodes: { caller: 'admin', role: 'support', csrf: true },
  getOperatorSession: { caller: 'operator', csrf: false },
  signInOperator: { caller: 'public' },
  signOutOperator: { caller: 'operator', csrf: true },
  getOperatorSignInMethods: { caller: 'public' },
  startOperatorOidcSignIn: { caller: 'public' },
  finishOperatorOidcSignIn: { caller: 'public' },
  startTotpEnrolment: { caller: 'operator', csrf: true },
  confirmTotpEnrolment: { caller: 'operator', csrf: true },
  adminListOperators: { caller: 'admin', role: 'owner', csrf: false },
  adminCreateOperator: { caller: 'admin', role: 'owner', csrf: true },
  adminDisableOperator: { caller: 'admin', role: 'owner', csrf: true },
  adminGetCatalog: { caller: 'admin', role: 'viewer', csrf: false },
  adminPutCatalogProvider: { caller: 'admin', role: 'admin', csrf: true },
  adminDeleteCatalogProvider: { caller: 'admin', role: 'admin', csrf: true },
  adminPutCatalogModel: { caller: 'admin', role: 'admin', csrf: true },
  adminDeleteCatalogModel: { caller: 'admin', role: 'admin', csrf: true },
  adminTestCatalogRoute: { caller: 'admin', role: 'admin', csrf: true },
  createMessage: { caller: 'key', scope: 'messages', anthropicKey: true, meter: 'paid', wire: 'messages' },
  countMessageTokens: { caller: 'key', scope: 'messages', anthropicKey: true, meter: 'metered', wire: 'count_tokens' },
  createResponse: { caller: 'key', scope: 'responses', anthropicKey: false, meter: 'paid', wire: 'responses' },
  retrieveResponse: { caller: 'key', scope: 'responses', anthropicKey: false, meter: 'counted' },
  deleteResponse: { caller: 'key', scope: 'responses', anthropicKey: false, meter: 'counted' },
  adminOverview: { caller: 'admin', role: 'viewer', csrf: false },
  adminGetAccount: { caller: 'admin', role: 'viewer', csrf: false },
  adminSettleDebt: { caller: 'admin', role: 'support', csrf: true },
  adminResendConfirmation: { caller: 'admin', role: 'support', csrf: true },
  adminListKeys: { caller: 'admin', role: 'viewer', csrf: false },
  adminListUsage: { caller: 'admin', role: 'support', csrf: false },
  adminGetUsage: { caller: 'admin', role: 'support', csrf: false },
  changeOperatorPassword: { caller: 'operator', csrf: true },
} as const satisfies { [Op in keyof operations]: Endpoint };
export type OperationId = keyof typeof ENDPOINTS;

/** The kinds of model each wire serves: a provider with an adapter for the wire serves them. */
export const WIRES = {
  chat: ['chat'],
  completions: ['completion'],
  embeddings: ['embedding'],
  images: ['image'],
  speech: ['speech'],
  transcriptions: ['transcription'],
  translations: ['transcription'],
  imageEdits: ['image'],
  moderations: ['moderation'],
  rerank: ['rerank'],
  messages: ['chat'],
  count_tokens: ['chat'],
  responses: ['chat'],
} as const satisfies { [W in keyof Wire]: readonly ModelKind[] };
export type UpstreamOp = keyof typeof WIRES;

/** The wires of paid operations: each is described by src/gateway/operations/<name>.ts. */
export type OperationName = 'chat' | 'completions' | 'embeddings' | 'images' | 'speech' | 'transcriptions' | 'translations' | 'imageEdits' | 'moderations' | 'rerank' | 'messages' | 'responses';

type Json<T> = { content: { 'application/json': T } };
type JsonRequest<Op extends keyof operations> = operations[Op] extends { requestBody?: Json<infer B> } ? B : never;
type Form<T> = { content: { 'multipart/form-data': T } };
/** A file of a multipart/form-data request, as the gateway read it: its bytes as they came, never joined. */
export interface Upload {
  readonly upload: true;
  filename: string;
  /** Its media type, as the client said it (application/octet-stream when it said none). */
  type: string;
  size: number;
  chunks: readonly Uint8Array[];
}
/** A multipart request: its text fields as the contract types them, its files (`One`, and `Many`: one or several) as uploads. */
type FormRequest<Op extends keyof operations, One extends string, Many extends string> =
  operations[Op] extends { requestBody?: Form<infer B> }
    ? { [K in keyof B as K extends One | Many ? never : K]: B[K] } & { [F in One]: Upload } & { [F in Many]: Upload | Upload[] }
    : never;
type JsonAnswer<Op extends keyof operations> = operations[Op] extends { responses: { 200: Json<infer R> } } ? R : never;

/** The bodies of the multipart operations, their files as uploads (the handlers' bodies, and their wires' requests). */
export interface FormBodies {
  createTranscription: FormRequest<'createTranscription', 'file', never>;
  createTranslation: FormRequest<'createTranslation', 'file', never>;
  createImageEdit: FormRequest<'createImageEdit', 'mask', 'image'>;
}

/**
 * The request, answer and stream event of each wire: those of the operation that goes through it. A wire whose answer
 * is bytes (audio) has no JSON answer (`never`): its chunks are the bytes as they come, or its stream events.
 */
export interface Wire {
  chat: {
    req: JsonRequest<'createChatCompletion'>;
    res: JsonAnswer<'createChatCompletion'>;
    chunk: components['schemas']['CreateChatCompletionStreamResponse'];
  };
  completions: {
    req: JsonRequest<'createCompletion'>;
    res: JsonAnswer<'createCompletion'>;
    chunk: components['schemas']['CreateCompletionResponse'];
  };
  embeddings: {
    req: JsonRequest<'createEmbedding'>;
    res: JsonAnswer<'createEmbedding'>;
    chunk: never;
  };
  images: {
    req: JsonRequest<'createImage'>;
    res: JsonAnswer<'createImage'>;
    chunk: never;
  };
  speech: {
    req: JsonRequest<'createSpeech'>;
    res: never;
    chunk: components['schemas']['CreateSpeechResponseStreamEvent'] | Uint8Array;
  };
  transcriptions: {
    req: FormBodies['createTranscription'];
    res: JsonAnswer<'createTranscription'>;
    chunk: never;
  };
  translations: {
    req: FormBodies['createTranslation'];
    res: JsonAnswer<'createTranslation'>;
    chunk: never;
  };
  imageEdits: {
    req: FormBodies['createImageEdit'];
    res: JsonAnswer<'createImageEdit'>;
    chunk: never;
  };
  moderations: {
    req: JsonRequest<'createModeration'>;
    res: JsonAnswer<'createModeration'>;
    chunk: never;
  };
  rerank: {
    req: JsonRequest<'createRerank'>;
    res: JsonAnswer<'createRerank'>;
    chunk: never;
  };
  messages: {
    req: JsonRequest<'createMessage'>;
    res: JsonAnswer<'createMessage'>;
    chunk: components['schemas']['AnthropicStreamEvent'];
  };
  count_tokens: {
    req: JsonRequest<'countMessageTokens'>;
    res: JsonAnswer<'countMessageTokens'>;
    chunk: never;
  };
  responses: {
    req: JsonRequest<'createResponse'>;
    res: JsonAnswer<'createResponse'>;
    chunk: components['schemas']['ResponseStreamEvent'];
  };
}
