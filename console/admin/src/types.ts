/**
 * Shapes of the admin API. Those in the contract come from it (openapi/openapi.yaml → generated/openapi.d.ts,
 * `make generate`); the rest are the shapes the server side was planned with, until their operations are in it.
 */
import type { components } from '../../../generated/openapi';

type S = components['schemas'];

/** USD amounts are decimal strings with six decimals ("21.000000"). */
export type Usd = S['Usd'] | number;

export type Operator = S['Operator'];
export type OperatorRole = S['OperatorRole'];
export type OperatorSession = S['OperatorSession'];
export type TotpEnrolment = S['TotpEnrolment'];
export type AdminAccount = S['AdminAccount'];
export type AccountList = S['AdminAccountList'];
export type AuditRecord = S['AuditRecord'];
export type AuditList = S['AdminAuditList'];
export type FarmingReport = S['FarmingReport'];
export type Revocation = S['Revocation'];
export type Grant = S['GrantCreditsResponse'];
export type Key = S['ConsoleKey'];
export type KeyChanges = S['AdminKeyUpdate'] & { enabled?: boolean };
export type CreatedCodes = S['CreateRedemptionCodesResponse'];
export type LedgerEntry = S['LedgerEntry'];
export type UsageRecord = S['UsageRecord'];

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/** What happened in one window (an hour, a day, 30 days). */
export interface Window {
  requests: number;
  errors: number;
  error_rate: number;
  prompt_tokens: number;
  completion_tokens: number;
  spend_usd: Usd;
  topups_usd: Usd;
}

export interface SpendRow {
  model?: string;
  provider?: string;
  requests: number;
  tokens: number;
  spend_usd: Usd;
}

export interface RouteHealth {
  model: string;
  provider: string;
  index: number;
  requests: number;
  errors: number;
  error_rate: number;
  p50_ms: number | null;
  p99_ms: number | null;
  breaker: 'closed' | 'open' | 'half_open';
  last_errors: { at: string; status: number | null; message: string }[];
}

export interface Overview {
  generated_at: string;
  windows: { hour: Window; day: Window; month: Window };
  by_model: SpendRow[];
  by_provider: SpendRow[];
  routes: RouteHealth[];
}

export interface AccountDetail {
  account: AdminAccount & { email_verified?: boolean };
  keys: (Key & { status?: string })[];
  ledger: LedgerEntry[];
  usage: { day: { requests: number; spend_usd: Usd }; month: { requests: number; spend_usd: Usd } };
  sign_ins: { at: string; address: string }[];
}

export type KeyHit = Key & { account_id: number; email: string };

export interface CodeRow {
  id?: number;
  code: string;
  batch: string | null;
  value_usd: Usd;
  created_at: string;
  redeemed_at: string | null;
  redeemed_by: { account_id: number; email: string } | null;
}

export type UsageRow = UsageRecord & { id?: number | string; account_id?: number; email?: string; provider?: string };

/** A request's receipt: the record, how it was counted, what was held for it and what it was charged. */
export type Receipt = Record<string, unknown> & { request_id?: string };

export interface CatalogProvider {
  name: string;
  type: string;
  base_url?: string | null;
  settings?: Record<string, unknown> | null;
  headers?: Record<string, string> | null;
  credentials?: { api_key: string | null } | null;
}

export interface CatalogRoute {
  provider: string;
  model?: string;
  priority?: number;
  weight?: number;
  timeouts?: Record<string, number>;
}

export interface CatalogModel {
  id: string;
  kind: string;
  owned_by?: string;
  price?: Record<string, unknown>;
  allow?: Record<string, unknown>;
  routes: CatalogRoute[];
  [more: string]: unknown;
}

export interface Catalog {
  source: 'yaml' | 'database';
  revision: number | string | null;
  providers: CatalogProvider[];
  models: CatalogModel[];
}

export interface RouteTest {
  ok: boolean;
  status: number | null;
  latency_ms: number | null;
  error: string | null;
}

export interface NewOperator {
  operator: Operator;
  /** The first password, shown this once. */
  password: string;
}

export interface SignInMethods {
  password: boolean;
  oidc: { name?: string; label?: string } | null;
}
