/**
 * The words the console uses for each `error.reason` the API gives (the contract's ErrorReason), so the keys page, the
 * usage page and an API error say the same thing about the same cause, and each says what to do.
 */
export type Reason = 'account_balance' | 'key_quota' | 'key_budget' | 'key_disabled' | 'key_expired';

/** Why a call was refused, as the usage page counts it: an API reason, or the key's rate limit (`rate_limit`). */
export type RefusalReason = Reason | 'rate_limit';

/** `why` completes "12 calls refused: …". */
export const REASON_WORDS: Record<RefusalReason, { label: string; fix: string; why: string }> = {
  account_balance: {
    label: 'Balance used up',
    fix: 'Add credits to your account.',
    why: "the account's credits are used up",
  },
  key_quota: {
    label: 'Spending limit reached',
    fix: "Raise this key's spending limit.",
    why: "the key's spending limit was reached",
  },
  key_budget: {
    label: 'Budget used up',
    fix: "The key's budget starts again at the next period.",
    why: "the key's budget for the period was used up",
  },
  key_disabled: { label: 'Disabled', fix: 'Enable the key to use it again.', why: 'the key is disabled' },
  key_expired: { label: 'Expired', fix: 'Set a later expiry date, or create a new key.', why: 'the key has expired' },
  rate_limit: {
    label: 'Rate limited',
    fix: 'Send fewer requests per minute, or retry after the time the answer names.',
    why: 'the key sent more requests or tokens per minute than its limit',
  },
};

/** Why a key refuses calls right now, as its row shows it; null when it works. */
export function keyBlocked(k: {
  enabled: boolean;
  expires_at?: string | null;
  quota_usd?: string | number | null;
  used_usd: string | number;
  budget?: { usd: string | number; spent_usd: string | number } | null;
}): Reason | null {
  if (!k.enabled) return 'key_disabled';
  if (k.expires_at && Date.parse(k.expires_at) <= Date.now()) return 'key_expired';
  if (k.quota_usd !== null && k.quota_usd !== undefined && Number(k.used_usd) >= Number(k.quota_usd))
    return 'key_quota';
  if (k.budget && Number(k.budget.spent_usd) >= Number(k.budget.usd)) return 'key_budget';
  return null;
}
