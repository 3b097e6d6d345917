import { formatUsd } from '../billing/money';
import { createCodes } from '../billing/redemption';
import { usdParam } from '../console/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /admin/api/redemption-codes: a batch of single-use codes, shown this once. */
export const adminCreateRedemptionCodes: Handler<'adminCreateRedemptionCodes'> = async ({ body, app }) => {
  const amount = usdParam(body.usd, 'usd');
  if (amount === 0) throw errors.invalidRequest("Invalid value for 'usd': must be more than 0", 'usd');
  const codes = await createCodes(app.db, body.count, amount, body.note ?? null);
  app.log.info({ count: codes.length, micros: amount, first: codes[0].id }, 'redemption codes created');
  return {
    status: 201,
    body: { codes: codes.map((c) => ({ id: c.id, code: c.code, amount_usd: formatUsd(c.amount_micros) })) },
    headers: { 'cache-control': 'no-store' },
  };
};
