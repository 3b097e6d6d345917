/**
 * The console API client: same-origin fetch to /console/api, the session cookie travels by itself, and every
 * state-changing call carries the CSRF token that register, login and GET /session hand out.
 * Errors come back as `{error: {message, type, param, code}}` and are thrown as ApiError.
 */
import type {
  AccountDetails,
  ApiKey,
  CheckoutResponse,
  ConsoleConfig,
  CreatedKey,
  DailyPage,
  KeyChanges,
  LedgerPage,
  LoginBody,
  ModelList,
  NewKeyInput,
  PasswordStrength,
  Redeemed,
  RefusedCalls,
  RegisterBody,
  Session,
  TopupOptions,
  UsagePage,
} from './types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string | null = null,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

const BASE = '/console/api';
let csrf: string | null = null;
let onUnauthorized: (() => void) | null = null;

export function setCsrf(token: string | null): void {
  csrf = token;
}

/** Called when an authenticated call answers 401 (the session expired or was logged out elsewhere). */
export function setUnauthorizedHandler(fn: (() => void) | null): void {
  onUnauthorized = fn;
}

type Query = Record<string, string | number | undefined | null>;

async function call<T>(
  method: string,
  path: string,
  opts: { body?: unknown; query?: Query; quiet401?: boolean } = {},
): Promise<T> {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(opts.query ?? {}))
    if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const url = `${BASE}${path}${qs.size ? `?${qs}` : ''}`;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiError(0, 'Could not reach Switchyard. Check your connection and try again.');
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) {
    const e = (data as { error?: { message?: string; type?: string; param?: string; code?: string } } | undefined)
      ?.error;
    if (res.status === 401 && !opts.quiet401) onUnauthorized?.();
    throw new ApiError(
      res.status,
      e?.message || `The request failed (HTTP ${res.status}).`,
      e?.type ?? null,
      e?.param ?? null,
      e?.code ?? null,
    );
  }
  return data as T;
}

export const api = {
  register: (body: RegisterBody) => call<Session>('POST', '/register', { body, quiet401: true }),
  login: (body: LoginBody) => call<Session>('POST', '/login', { body, quiet401: true }),
  logout: () => call<void>('POST', '/logout', { quiet401: true }),
  session: () => call<Session>('GET', '/session', { quiet401: true }),
  account: () => call<AccountDetails>('GET', '/account'),
  updateAccount: (body: { low_balance_usd: string | null }) => call<AccountDetails>('PATCH', '/account', { body }),
  keys: () => call<{ data: ApiKey[] }>('GET', '/keys'),
  createKey: (body: NewKeyInput) => call<CreatedKey>('POST', '/keys', { body }),
  updateKey: (id: number | string, body: KeyChanges) =>
    call<ApiKey>('PATCH', `/keys/${encodeURIComponent(String(id))}`, { body }),
  deleteKey: (id: number | string) => call<void>('DELETE', `/keys/${encodeURIComponent(String(id))}`),
  models: () => call<ModelList>('GET', '/models'),
  redeem: (code: string) => call<Redeemed>('POST', '/topup/redeem', { body: { code } }),
  topupOptions: () => call<TopupOptions>('GET', '/topup/options'),
  checkout: (amount_usd: string) => call<CheckoutResponse>('POST', '/topup/checkout', { body: { amount_usd } }),
  usage: (query: Query) => call<UsagePage>('GET', '/usage', { query }),
  daily: (days: number) => call<DailyPage>('GET', '/usage/daily', { query: { days } }),
  refused: (query: Query) => call<RefusedCalls>('GET', '/usage/refused', { query }),
  ledger: (query: Query) => call<LedgerPage>('GET', '/ledger', { query }),
  config: () => call<ConsoleConfig>('GET', '/config', { quiet401: true }),
  verifyEmail: (token: string) =>
    call<{ email_verified: true; already_verified: boolean }>('POST', '/verify-email', {
      body: { token },
      quiet401: true,
    }),
  checkPasswordReset: (token: string) =>
    call<{ valid: true }>('POST', '/password-reset/check', { body: { token }, quiet401: true }),
  passwordStrength: (password: string, email?: string) =>
    call<PasswordStrength>('POST', '/password-strength', { body: { password, email }, quiet401: true }),
  resendVerification: () => call<{ sent: true }>('POST', '/verify-email/resend'),
  requestPasswordReset: (email: string) =>
    call<{ sent: true }>('POST', '/password-reset', { body: { email }, quiet401: true }),
  confirmPasswordReset: (token: string, password: string) =>
    call<{ password_reset: true; email: string }>('POST', '/password-reset/confirm', {
      body: { token, password },
      quiet401: true,
    }),
};
