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
export type CreatedBatch = CreatedCodes & { batch?: number };
export type CreatedCodes = S['CreateRedemptionCodesResponse'];
export type LedgerEntry = S['LedgerEntry'];

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
  upstream_model?: string;
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

export type AdminKey = Key & { account_id: number; email: string; status: string };

export type AdminLedgerEntry = LedgerEntry & { key_id: number | null; note: string | null };

export interface AccountDetail {
  account: AdminAccount;
  email_verified: boolean;
  keys: AdminKey[];
  ledger: AdminLedgerEntry[];
  usage: { day: { requests: number; spend_usd: Usd }; month: { requests: number; spend_usd: Usd } };
  sign_ins: { at: string; address: string }[];
}

export interface DebtSettled {
  account_id: number;
  paid_usd: Usd;
  forgiven_usd: Usd;
  debt_usd: Usd;
  balance_usd: Usd;
  status: string;
}

export interface CodeRow {
  id: number;
  batch: number;
  /** Its first characters only: the whole code is not stored. */
  code: string;
  amount_usd: Usd;
  note: string | null;
  created_at: string;
  created_by: string | null;
  redeemed_at: string | null;
  redeemed_by: { account_id: number; email: string | null } | null;
}

export type UsageClass = components['schemas']['UsageClass'];

export interface UsageRow {
  id: number;
  request_id: string;
  account_id: number;
  key_id: number | null;
  model: string;
  provider: string | null;
  endpoint: string;
  status: number;
  usage: Record<string, number>;
  counted: string;
  cost_usd: Usd;
  latency_ms: number | null;
  ttfb_ms: number | null;
  created_at: string;
}

export type UsagePage = Page<UsageRow> & { classes: UsageClass[] };

/** A request's receipt: the record, how it was counted, what was held for it and what it was charged. */
export interface Receipt {
  record: UsageRow;
  counted: { by: string; explanation: string };
  classes: UsageClass[];
  hold: { usd: Usd; prompt_tokens: number; output_tokens: number } | null;
  charge: { usd: Usd; uncovered_usd: Usd };
  ledger: AdminLedgerEntry[];
}

export type Catalog = S['Catalog'];
export type CatalogProvider = S['CatalogProvider'];
export type ProviderInput = S['CatalogProviderInput'];
export type CatalogModel = S['CatalogModel'];
export type RouteTest = S['CatalogRouteTest'];

export interface NewOperator {
  operator: Operator;
  /** The first password, shown this once. */
  password: string;
}

export type SignInMethods = S['OperatorSignInMethods'];
