/**
 * Bedrock's errors: a body `{"message": "..."}` and the error's type in the `x-amzn-errortype` header
 * (`ThrottlingException:http://internal.amazon.com/...`), or inside a stream in `:exception-type`
 * (`throttlingException`). The type decides the status we act on, and, for a credential AWS refused, the
 * description says which of the provider's credentials it was — never its value — for the operator's log.
 */
import { str } from '../shared';
import type { ErrorReader } from '../types';
import type { BedrockError } from './wire';

/** Bedrock's exceptions, lower-cased, → the status we treat them as (429: fall back; 400: the caller's fault). */
const STATUS: Record<string, number> = {
  throttlingexception: 429,
  // a quota of the operator's account, not the caller's fault: another route may have room
  servicequotaexceededexception: 429,
  modelnotreadyexception: 503,
  validationexception: 400,
  accessdeniedexception: 403,
  unrecognizedclientexception: 403,
  invalidsignatureexception: 403,
  expiredtokenexception: 403,
  resourcenotfoundexception: 404,
  modeltimeoutexception: 504,
  modelerrorexception: 502,
  modelstreamerrorexception: 502,
  internalserverexception: 500,
  serviceunavailableexception: 503,
};

/** Which credential each refusal is about, for the log line (the operator fixes that setting). */
const CREDENTIAL: Record<string, string> = {
  invalidsignatureexception: 'the signature was refused: check secret_access_key',
  unrecognizedclientexception:
    'the access key or session token is not known to AWS: check access_key_id and session_token',
  expiredtokenexception: 'the session token has expired: renew session_token',
  accessdeniedexception: 'the credentials are not allowed to call this model: check the IAM policy of access_key_id',
};

const lowerType = (type: string) => type.split(':')[0].trim().toLowerCase();

export function statusOfErrorType(type: string): number {
  return STATUS[lowerType(type)] ?? 500;
}

/** The error's type: the header, else what some front ends put in the body. */
function errorType(body: BedrockError, headers: Record<string, string>): string | undefined {
  const type = headers['x-amzn-errortype'] ?? str(body.__type);
  return type?.split(':')[0].split('#').pop()?.trim() || undefined;
}

export const readError: ErrorReader = (body, status, headers) => {
  const b = (body && typeof body === 'object' ? body : {}) as BedrockError;
  const type = errorType(b, headers);
  const known = type ? STATUS[type.toLowerCase()] : undefined;
  const credential = type ? CREDENTIAL[type.toLowerCase()] : undefined;
  return {
    // Throttling must be a 429 (fall back, tell the caller to wait) whatever status carried it.
    status: known === 429 || known === 400 ? known : status,
    // A refused credential is our configuration's fault: the caller is told nothing of it.
    message: credential ? undefined : (str(b.message) ?? str(b.Message)),
    code: type ? `${type}${credential ? ` (${credential})` : ''}` : undefined,
  };
};
