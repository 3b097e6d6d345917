/**
 * What an admin needs to spot farmed credits and take back what was not spent: referrals per referrer, accounts per
 * registration network (an IPv4 address, an IPv6 /64), unconfirmed accounts; and the revocation of free credits.
 */
import type { Knex } from 'knex';
import { transact } from '../db';
import { postWithin } from '../db/ledger';
import { formatUsd } from '../money';

const FREE = ['signup', 'referral'];

export async function farmingReport(db: Knex) {
  const referrers = (await db('accounts as r')
    .join('accounts as a', 'a.referred_by', 'r.id')
    .groupBy('r.id', 'r.email')
    .select('r.id', 'r.email')
    .count({ referred: 'a.id' })
    .count({ confirmed: 'a.verified_at' })
    .orderBy('referred', 'desc')
    .limit(50)) as { id: number; email: string; referred: unknown; confirmed: unknown }[];
  const earned = new Map(
    (
      (await db('ledger')
        .whereIn(
          'account_id',
          referrers.map((r) => r.id),
        )
        .andWhere('kind', 'referral')
        .andWhere('ref', 'like', 'referred_%')
        .groupBy('account_id')
        .select('account_id')
        .sum({ total: 'amount_micros' })) as { account_id: number; total: unknown }[]
    ).map((r) => [Number(r.account_id), Number(r.total)]),
  );
  const networks = (await db('accounts')
    .whereNotNull('registered_from')
    .groupBy('registered_from')
    .select('registered_from')
    .count({ accounts: 'id' })
    .count({ confirmed: 'verified_at' })
    .havingRaw('count(id) > 1')
    .orderBy('accounts', 'desc')
    .limit(50)) as { registered_from: string; accounts: unknown; confirmed: unknown }[];
  const unconfirmed = await db('accounts')
    .whereNull('verified_at')
    .orderBy('id', 'desc')
    .limit(100)
    .select('id', 'email', 'registered_from', 'created_at');
  return {
    referrers: referrers.map((r) => ({
      account_id: Number(r.id),
      email: String(r.email),
      referred: Number(r.referred),
      confirmed: Number(r.confirmed),
      earned_usd: formatUsd(earned.get(Number(r.id)) ?? 0),
    })),
    networks: networks.map((n) => ({
      network: String(n.registered_from),
      accounts: Number(n.accounts),
      confirmed: Number(n.confirmed),
    })),
    unconfirmed: unconfirmed.map((a) => ({
      account_id: Number(a.id),
      email: String(a.email),
      network: (a.registered_from as string | null) ?? null,
      created_at: new Date(Number(a.created_at)).toISOString(),
    })),
  };
}

/**
 * Takes back the free credits (sign-up and referral) an account has not spent: free credits count as spent first,
 * paid money is never taken, and the balance never drops below what requests in flight hold. A `revocation`
 * ledger row; null when the account does not exist.
 */
export function revokeFreeCredits(
  db: Knex,
  accountId: number,
  now = Date.now(),
): Promise<{ revoked_micros: number; balance_micros: number } | null> {
  return transact(db, async (trx) => {
    const account = await trx('accounts').where('id', accountId).forUpdate().first('balance_micros', 'held_micros');
    if (!account) return null;
    const sums = (await trx('ledger')
      .where('account_id', accountId)
      .whereIn('kind', [...FREE, 'usage', 'revocation'])
      .groupBy('kind')
      .select('kind')
      .sum({ total: 'amount_micros' })) as { kind: string; total: unknown }[];
    const of = (kinds: string[]) => sums.filter((s) => kinds.includes(s.kind)).reduce((a, s) => a + Number(s.total), 0);
    const unspentFree = Math.max(0, of(FREE) + of(['revocation']) + of(['usage'])); // usage and revocations are negative
    const take = Math.min(unspentFree, Math.max(0, Number(account.balance_micros) - Number(account.held_micros)));
    if (take > 0)
      await postWithin(trx, {
        accountId,
        kind: 'revocation',
        amountMicros: -take,
        ref: `revocation_${accountId}_${now}`,
        note: 'unspent free credits taken back',
      });
    return { revoked_micros: take, balance_micros: Number(account.balance_micros) - take };
  });
}
