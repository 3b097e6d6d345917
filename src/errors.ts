/**
 * Every failure the gateway reports to a client is an ApiError: an HTTP status plus the OpenAI error object
 * `{error: {message, type, param, code}}`. Domain modules throw these; the server turns them into responses.
 * Messages never contain upstream URLs, credentials or API keys.
 */
import type { components } from '../generated/openapi';

export type ErrorBody = components['schemas']['ErrorResponse'];
export type ErrorReason = NonNullable<components['schemas']['Error']['reason']>;

export class ApiError extends Error {
  /** What the request's log line says of the failure besides the message (never sent to the client). */
  logged?: Record<string, string>;

  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
    /** Why, where `code` alone leaves the caller guessing what to fix (ErrorReason in the contract). */
    readonly reason?: ErrorReason,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { message: this.message, type: this.type, param: this.param, code: this.code };
    if (this.reason) error.reason = this.reason;
    return { error };
  }
}

export const errors = {
  /** A key that is not one, or (with `reason`) one that was disabled or has expired: the same message and code. */
  invalidApiKey: (reason?: 'key_disabled' | 'key_expired') =>
    new ApiError(401, 'authentication_error', 'Invalid API key', 'invalid_api_key', null, {}, reason),
  missingScope: (scope: string) =>
    new ApiError(403, 'permission_error', `This API key does not have the '${scope}' scope`, 'insufficient_scope'),
  modelNotFound: (model: string, status = 400) =>
    new ApiError(status, 'invalid_request_error', `Model not found: ${model}`, 'model_not_found', 'model'),
  wrongModelKind: (model: string, kind: string, endpoint: string) =>
    new ApiError(
      400,
      'invalid_request_error',
      `Model ${model} is a ${kind} model and cannot be used with ${endpoint}`,
      'model_not_supported',
      'model',
    ),
  invalidJson: () =>
    new ApiError(400, 'invalid_request_error', 'We could not parse the JSON body of your request.', 'invalid_json'),
  invalidRequest: (message: string, param: string | null = null, code: string | null = 'invalid_value') =>
    new ApiError(400, 'invalid_request_error', message, code, param),
  notFoundResource: (message: string, param: string | null) =>
    new ApiError(404, 'invalid_request_error', message, 'not_found', param),
  notFound: (path: string) => new ApiError(404, 'invalid_request_error', `Unknown request URL: ${path}`, 'unknown_url'),
  methodNotAllowed: (method: string, path: string) =>
    new ApiError(
      405,
      'invalid_request_error',
      `Method ${method.toUpperCase()} is not allowed for ${path}`,
      'method_not_allowed',
    ),
  tooLarge: (limit: number) =>
    new ApiError(
      413,
      'invalid_request_error',
      `Request body is larger than the limit of ${limit} bytes`,
      'request_too_large',
    ),
  unsupportedMediaType: (expected = 'application/json') =>
    new ApiError(415, 'invalid_request_error', `Content-Type must be ${expected}`, 'unsupported_media_type'),
  /** The client went away before its request was read (never sent: there is no one to send it to; for the log). */
  clientClosed: () =>
    new ApiError(
      499,
      'invalid_request_error',
      'The client closed the connection before its request was read',
      'client_closed',
    ),
  internal: () => new ApiError(500, 'server_error', 'Internal server error', 'internal_error'),
  invalidToken: () =>
    new ApiError(
      400,
      'invalid_request_error',
      'This link is invalid, used or expired; ask for a new one',
      'invalid_token',
      'token',
    ),
  idempotencyKeyReused: (message: string) =>
    new ApiError(400, 'invalid_request_error', message, 'idempotency_key_reused'),
  upstreamUnavailable: (detail?: string) =>
    new ApiError(
      502,
      'upstream_error',
      detail ? `The upstream provider is unavailable (${detail})` : 'The upstream provider is unavailable',
      'upstream_unavailable',
    ),
  upstreamRateLimited: () =>
    new ApiError(
      429,
      'rate_limit_error',
      'The upstream provider is rate limiting requests; try again later',
      'upstream_rate_limited',
    ),
  unavailable: () =>
    new ApiError(503, 'service_unavailable', 'The service is temporarily unavailable', 'service_unavailable'),

  // console and admin
  notLoggedIn: () => new ApiError(401, 'authentication_error', 'Not logged in', 'not_logged_in'),
  invalidCredentials: () =>
    new ApiError(401, 'authentication_error', 'Invalid email or password', 'invalid_credentials'),
  invalidOperatorCredentials: () =>
    new ApiError(401, 'authentication_error', 'Invalid email, password or TOTP code', 'invalid_credentials'),
  invalidAdminToken: () => new ApiError(401, 'authentication_error', 'Invalid admin token', 'invalid_admin_token'),
  csrfFailed: () => new ApiError(403, 'permission_error', 'Missing or invalid CSRF token', 'csrf_failed'),
  insufficientRole: (role: string, operation: string, needed: string) =>
    new ApiError(
      403,
      'permission_error',
      `The role '${role}' may not call ${operation}: it needs the role '${needed}' or a higher one`,
      'insufficient_role',
    ),
  secondFactorRequired: () =>
    new ApiError(
      403,
      'permission_error',
      'Enrol a TOTP second factor first (POST /admin/api/session/totp, then /confirm)',
      'second_factor_required',
    ),
  invalidCode: () => new ApiError(400, 'invalid_request_error', 'Invalid TOTP code', 'invalid_code', 'code'),
  passwordSignInOff: (provider: string) =>
    new ApiError(
      403,
      'permission_error',
      `Signing in with a password is off here: sign in with ${provider}`,
      'password_sign_in_disabled',
    ),
  oidcNotConfigured: () =>
    new ApiError(
      404,
      'invalid_request_error',
      'Signing in with OpenID Connect is not configured here (admin.oidc)',
      'oidc_not_configured',
    ),
  oidcUnavailable: () =>
    new ApiError(
      503,
      'service_unavailable',
      'The OpenID provider cannot be reached; try again later',
      'oidc_provider_unavailable',
    ),
  oidcExpired: () =>
    new ApiError(
      400,
      'invalid_request_error',
      'No sign-in with the OpenID provider is under way in this browser: it expired (10 minutes), was already used, or was started in another browser. Sign in again',
      'oidc_sign_in_expired',
    ),
  oidcStateMismatch: () =>
    new ApiError(
      400,
      'invalid_request_error',
      "The OpenID provider's answer does not belong to the sign-in this browser started (its state does not match). Sign in again",
      'oidc_state_mismatch',
      'state',
    ),
  oidcRefused: (error: string) =>
    new ApiError(400, 'invalid_request_error', `The OpenID provider refused the sign-in (${error})`, 'oidc_refused'),
  oidcFailed: (reason: string) =>
    new ApiError(
      400,
      'invalid_request_error',
      `The OpenID provider's answer could not be verified (${reason}). Sign in again`,
      'oidc_sign_in_failed',
    ),
  /** An OpenID sign-in the provider vouched for, refused here (no role, disabled...): the message says why. */
  oidcForbidden: (message: string, code: string) => new ApiError(403, 'permission_error', message, code),
  accountDisabled: () => new ApiError(403, 'permission_error', 'This account is disabled', 'account_disabled'),
  keyNotFound: (id: number) =>
    new ApiError(404, 'invalid_request_error', `No such API key: ${id}`, 'key_not_found', 'id'),
  accountNotFound: (id: number) =>
    new ApiError(404, 'invalid_request_error', `No such account: ${id}`, 'account_not_found', 'id'),
  cardPaymentsOff: () =>
    new ApiError(404, 'invalid_request_error', 'card payments are not configured', 'card_payments_not_configured'),
  conflict: (message: string, code: string, param: string | null) =>
    new ApiError(409, 'invalid_request_error', message, code, param),
  /** A catalog change refused: the catalog is in the file, a provider still routed to, changes that kept colliding. */
  catalogConflict: (message: string, code: 'catalog_in_file' | 'provider_in_use' | 'catalog_busy', param?: string) =>
    new ApiError(409, 'invalid_request_error', message, code, param ?? null),
  paymentProviderUnavailable: () =>
    new ApiError(
      502,
      'upstream_error',
      'The payment provider is unavailable; try again later',
      'payment_provider_unavailable',
    ),
};

/** Anthropic's error types, by the status we answer with. */
const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

/**
 * An error as Anthropic's API answers it, `{"type":"error","error":{"type","message"}}`, with Anthropic's status:
 * a balance or quota that cannot pay is 402 `billing_error`, every route cooling down 529 `overloaded_error`.
 */
export function anthropicError(e: ApiError): {
  status: number;
  body: { type: 'error'; error: { type: string; message: string } };
} {
  const status = e.type === 'insufficient_quota' ? 402 : e.status === 503 ? 529 : e.status;
  const type = ANTHROPIC_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return { status, body: { type: 'error', error: { type, message: e.message } } };
}
