import { DebtNotSettled, settleDebt } from '../billing/debt';
import { formatUsd } from '../money';
import { errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /admin/api/accounts/{id}/settle-debt: what the account owes, paid out of its free balance or forgiven (with a
 * reason). Audited by the HTTP layer, with the account before and after.
 */
export const adminSettleDebt: Handler<'adminSettleDebt'> = async ({ params, body, app }) => {
  const forgive = body.from === 'forgive';
  const note = body.note?.trim() || null;
  if (forgive && !note) throw errors.invalidRequest('Say why the debt is forgiven in note', 'note', 'note_required');
  let done;
  try {
    done = await settleDebt(app.db, params.id, { forgive, note });
  } catch (e) {
    if (!(e instanceof DebtNotSettled)) throw e;
    if (e.reason === 'no_debt') throw errors.conflict(`Account ${params.id} owes nothing`, 'no_debt', null);
    throw errors.conflict(
      `Account ${params.id} owes ${formatUsd(e.owedMicros)} USD and has ${formatUsd(e.freeMicros)} USD free (its balance less what requests in flight hold); top it up, or forgive the debt with from=forgive and a note`,
      'insufficient_balance',
      'from',
    );
  }
  if (!done) throw errors.accountNotFound(params.id);
  if (done.reactivated) app.keys.changed({ accountId: params.id }); // nothing owed: its keys work again everywhere
  app.log.info({ account: params.id, paid: done.paidMicros, forgiven: done.forgivenMicros }, 'debt settled');
  return {
    body: {
      account_id: params.id,
      paid_usd: formatUsd(done.paidMicros),
      forgiven_usd: formatUsd(done.forgivenMicros),
      debt_usd: formatUsd(done.debtMicros),
      balance_usd: formatUsd(done.balanceMicros),
      status: done.status,
    },
  };
};
