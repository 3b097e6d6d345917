/**
 * The words the console uses for each `error.reason` the API gives (the contract's ErrorReason), so the keys page, the
 * usage page and an API error say the same thing about the same cause, and each says what to do.
 */
export type Reason = 'account_balance' | 'key_quota' | 'key_budget' | 'key_disabled' | 'key_expired';

export const REASON_WORDS: Record<Reason, { label: string; fix: string }> = {
  account_balance: { label: 'Balance used up', fix: 'Add credits to your account.' },
  key_quota: { label: 'Spending limit reached', fix: "Raise this key's spending limit." },
  key_budget: { label: 'Budget used up', fix: "The key's budget starts again at the next period." },
  key_disabled: { label: 'Disabled', fix: 'Enable the key to use it again.' },
  key_expired: { label: 'Expired', fix: 'Set a later expiry date, or create a new key.' },
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
