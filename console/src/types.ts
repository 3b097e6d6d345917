/** Shapes of the console API, from the contract (openapi/openapi.yaml → generated/openapi.d.ts, `make generate`). */
import type { components, operations } from '../../generated/openapi';

type S = components['schemas'];
type Body<Op extends keyof operations> = operations[Op] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

/** USD amounts are decimal strings with six decimals ("21.000000"). */
export type Usd = S['Usd'] | number;

export type AccountDetails = S['ConsoleAccount'];
export type Account = S['ConsoleAccount'];
export type Session = S['ConsoleSession'];
export type Scope = S['KeyScope'];
export type ApiKey = S['ConsoleKey'];
export type CreatedKey = S['CreatedConsoleKey'];
export type NewKeyInput = S['CreateConsoleKeyRequest'];
export type KeyChanges = S['UpdateConsoleKeyRequest'];
export type Model = S['ConsoleModel'];
export type ModelList = S['ConsoleModelList'];
export type Redeemed = S['RedeemResponse'];
export type TopupOptions = S['TopupOptions'];
export type UsageRow = S['UsageRecord'];
export type ModelTotal = S['ModelUsageTotal'];
export type UsageClass = S['UsageClass'];
export type UsageCounts = S['UsageCounts'];
export type UsagePage = S['UsagePage'];
export type DailyPage = S['DailyUsage'];
export type DailyUsage = DailyPage['data'][number];
export type RefusedCalls = S['RefusedCalls'];
export type RefusedRow = RefusedCalls['data'][number];
export type LedgerKind = S['LedgerKind'];
export type LedgerEntry = S['LedgerEntry'];
export type LedgerPage = S['LedgerPage'];
export type CheckoutResponse = S['CheckoutResponse'];
export type RegisterBody = Body<'register'>;
export type LoginBody = Body<'login'>;

/** Every scope a key may have and what it lets the key call, from the contract (KeyScope; see src/contract.ts). */
export { SCOPE_LABELS, SCOPES } from '../../src/contract';
export type ConsoleConfig = S['ConsoleConfig'];
export type PasswordStrength = S['PasswordStrength'];
