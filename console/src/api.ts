/**
 * The console API client (./http.ts) on /console/api: every state-changing call carries the CSRF token that
 * register, login and GET /session hand out.
 */
import { ApiClient, type CallOptions, type Query } from './http';
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

export { ApiError } from './http';

const http = new ApiClient('/console/api');

export function setCsrf(token: string | null): void {
  http.csrf = token;
}

/** Called when an authenticated call answers 401 (the session expired or was logged out elsewhere). */
export function setUnauthorizedHandler(fn: (() => void) | null): void {
  http.onUnauthorized = fn;
}

const call = <T>(method: string, path: string, opts?: CallOptions) => http.call<T>(method, path, opts);

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
