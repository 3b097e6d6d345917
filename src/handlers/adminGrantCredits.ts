import { getAccount } from '../accounts/accounts';
import { post } from '../billing/ledger';
import { formatUsd } from '../billing/money';
import { usdParam } from '../console/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /admin/api/accounts/{id}/credits: `grant` (positive) or `adjustment` (negative, never below zero). */
export const adminGrantCredits: Handler<'adminGrantCredits'> = async ({ params, body, app }) => {
  const amount = usdParam(body.usd, 'usd', { allowNegative: true });
  if (amount === 0) throw errors.invalidRequest("Invalid value for 'usd': must not be 0", 'usd');
  if (!(await getAccount(app.db, params.id))) throw errors.accountNotFound(params.id);
  const kind = amount > 0 ? 'grant' : 'adjustment';
  const row = await post(app.db, { accountId: params.id, kind, amountMicros: amount, note: body.note ?? null }, amount < 0 ? { floor: 0 } : {});
  if (!row) throw errors.invalidRequest(`Account ${params.id} has less than ${formatUsd(-amount)} USD`, 'usd', 'insufficient_balance');
  app.log.info({ account: params.id, kind, micros: amount, ledger: row.id }, 'admin credits');
  return { body: { account_id: params.id, kind, amount_usd: formatUsd(amount), balance_usd: formatUsd(row.balance_after), ledger_id: row.id } };
};
