/** Shapes of the admin API, from the contract (openapi/openapi.yaml → generated/openapi.d.ts, `make generate`). */
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
export type KeyChanges = S['AdminKeyUpdate'];
export type CreatedBatch = CreatedCodes;
export type CreatedCodes = S['CreateRedemptionCodesResponse'];
export type LedgerEntry = S['LedgerEntry'];

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

export type Overview = S['AdminOverview'];
export type Window = S['OverviewWindow'];
export type SpendRow = S['OverviewSpend'];
export type RouteHealth = S['OverviewRoute'];
export type AdminKey = S['AdminKey'];
export type AdminLedgerEntry = S['AdminLedgerEntry'];
export type AccountDetail = S['AdminAccountDetail'];
export type DebtSettled = S['DebtSettled'];
export type CodeRow = S['RedemptionCodeView'];
export type UsageClass = S['UsageClass'];
export type UsageRow = S['AdminUsageRecord'];
export type UsagePage = S['AdminUsagePage'];
export type Receipt = S['UsageReceipt'];

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
