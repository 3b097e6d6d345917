import { AccountError, grantOnce, NotEnoughCredits } from '../services/admin';
import { IdempotencyMismatch } from '../services/idempotency';
import { formatUsd } from '../money';
import { idempotencyKey, usdParam } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /admin/api/accounts/{id}/credits: `grant` (positive; what the account owes first) or `adjustment` (negative, never below zero); Idempotency-Key. */
export const adminGrantCredits: Handler<'adminGrantCredits'> = async ({ params, body, app, headers }) => {
  const amount = usdParam(body.usd, 'usd', { allowNegative: true });
  if (amount === 0) throw errors.invalidRequest("Invalid value for 'usd': must not be 0", 'usd');
  const kind = amount > 0 ? 'grant' : 'adjustment';
  let done;
  try {
    done = await grantOnce(app.db, idempotencyKey(headers), params.id, amount, body.note ?? null);
  } catch (e) {
    if (e instanceof IdempotencyMismatch) throw errors.idempotencyKeyReused(e.message);
    if (e instanceof NotEnoughCredits)
      throw errors.invalidRequest(
        `Account ${params.id} has less than ${formatUsd(-amount)} USD`,
        'usd',
        'insufficient_balance',
      );
    if (e instanceof AccountError) throw errors.accountNotFound(params.id);
    throw e;
  }
  if (done.reactivated) app.keys.changed({ accountId: params.id }); // its debt paid: its keys work again everywhere
  app.log.info({ account: params.id, kind, micros: amount, ledger: done.ledger_id }, 'admin credits');
  return {
    body: {
      account_id: params.id,
      kind,
      amount_usd: formatUsd(amount),
      balance_usd: formatUsd(done.balance_after),
      ledger_id: done.ledger_id,
    },
  };
};
