/**
 * Every call the operators' app makes, in one place: the admin API (/admin/api, the contract's), through the
 * console's client (../../src/http.ts): the sy_admin cookie travels by itself, state-changing calls carry the
 * session's CSRF token, and grants and code batches an Idempotency-Key (a double click credits once).
 */
import { ApiClient, type Query } from '../../src/http';
import type {
  AccountDetail,
  AccountList,
  AdminAccount,
  AuditList,
  Catalog,
  CatalogModel,
  CatalogProvider,
  CodeRow,
  FarmingReport,
  Grant,
  Key,
  KeyChanges,
  AdminKey,
  DebtSettled,
  ProviderInput,
  UsagePage,
  CreatedBatch,
  NewOperator,
  Operator,
  OperatorRole,
  OperatorSession,
  Overview,
  Page,
  Receipt,
  Revocation,
  RouteTest,
  SignInMethods,
  TotpEnrolment,
} from './types';

export { ApiError } from '../../src/http';

export const http = new ApiClient('/admin/api');

/** A fresh Idempotency-Key for one action (a retry of the same action sends the same key). */
export function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

const id = (v: number | string) => encodeURIComponent(String(v));
const call = http.call.bind(http);
const once = (key: string) => ({ 'idempotency-key': key });

export const api = {
  session: () => call<OperatorSession>('GET', '/session', { quiet401: true }),
  signIn: (body: { email: string; password: string; code?: string }) =>
    call<OperatorSession>('POST', '/session', { body, quiet401: true }),
  signOut: () => call<void>('DELETE', '/session', { quiet401: true }),
  methods: () => call<SignInMethods>('GET', '/session/methods', { quiet401: true }),
  startTotp: () => call<TotpEnrolment>('POST', '/session/totp'),
  confirmTotp: (code: string) => call<OperatorSession>('POST', '/session/totp/confirm', { body: { code } }),
  changePassword: (body: { current_password: string; new_password: string }) =>
    call<void>('POST', '/session/password', { body, quiet401: true }),

  overview: () => call<Overview>('GET', '/overview'),

  accounts: (query: Query) => call<AccountList>('GET', '/accounts', { query }),
  account: (a: number | string) => call<AccountDetail>('GET', `/accounts/${id(a)}`),
  grant: (a: number, body: { usd: string; note: string | null }, key: string) =>
    call<Grant>('POST', `/accounts/${id(a)}/credits`, { body, headers: once(key) }),
  disable: (a: number) => call<AdminAccount>('POST', `/accounts/${id(a)}/disable`),
  enable: (a: number) => call<AdminAccount>('POST', `/accounts/${id(a)}/enable`),
  revokeFreeCredits: (a: number) => call<Revocation>('POST', `/accounts/${id(a)}/revoke-free-credits`),
  settleDebt: (a: number, body: { from: 'balance' | 'forgive'; note: string | null }) =>
    call<DebtSettled>('POST', `/accounts/${id(a)}/settle-debt`, { body }),
  resendConfirmation: (a: number) => call<{ sent: boolean }>('POST', `/accounts/${id(a)}/resend-confirmation`),

  keys: (query: Query) => call<Page<AdminKey>>('GET', '/keys', { query }),
  updateKey: (k: number, body: KeyChanges) => call<Key>('PATCH', `/keys/${id(k)}`, { body }),

  codes: (query: Query) => call<Page<CodeRow>>('GET', '/redemption-codes', { query }),
  createCodes: (body: { count: number; usd: string; note: string | null }, key: string) =>
    call<CreatedBatch>('POST', '/redemption-codes', { body, headers: once(key) }),

  farming: () => call<FarmingReport>('GET', '/farming'),

  usage: (query: Query) => call<UsagePage>('GET', '/usage', { query }),
  receipt: (r: string) => call<Receipt>('GET', `/usage/${id(r)}`),

  catalog: () => call<Catalog>('GET', '/catalog'),
  putProvider: (name: string, body: ProviderInput) =>
    call<{ revision: number; provider: CatalogProvider }>('PUT', `/catalog/providers/${id(name)}`, { body }),
  deleteProvider: (name: string) => call<unknown>('DELETE', `/catalog/providers/${id(name)}`),
  putModel: (m: string, body: CatalogModel) =>
    call<{ revision: number; model: CatalogModel }>('PUT', `/catalog/models/${id(m)}`, { body }),
  deleteModel: (m: string) => call<unknown>('DELETE', `/catalog/models/${id(m)}`),
  testRoute: (m: string, index: number) => call<RouteTest>('POST', `/catalog/models/${id(m)}/routes/${index}/test`),

  audit: (query: Query) => call<AuditList>('GET', '/audit', { query }),

  operators: () => call<{ data: Operator[] }>('GET', '/operators'),
  createOperator: (body: { email: string; role: OperatorRole }) => call<NewOperator>('POST', '/operators', { body }),
  disableOperator: (o: number) => call<Operator>('POST', `/operators/${id(o)}/disable`),
};

/** Where a list's CSV is downloaded from: the same filters, as CSV (the browser sends the cookie; a GET needs no CSRF). */
export const csvUrl = (path: string, query: Query = {}) => http.url(path, { ...query, format: 'csv' });
