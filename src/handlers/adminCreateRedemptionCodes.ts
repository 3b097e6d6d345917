import { formatUsd } from '../money';
import { createCodesOnce } from '../services/admin';
import { IdempotencyMismatch } from '../services/idempotency';
import { idempotencyKey, usdParam } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/** POST /admin/api/redemption-codes: a batch of single-use codes, shown this once (or again to a retry with the same Idempotency-Key). */
export const adminCreateRedemptionCodes: Handler<'adminCreateRedemptionCodes'> = async ({ body, app, headers }) => {
  const amount = usdParam(body.usd, 'usd');
  if (amount === 0) throw errors.invalidRequest("Invalid value for 'usd': must be more than 0", 'usd');
  let codes;
  try {
    codes = await createCodesOnce(app.db, idempotencyKey(headers), body.count, amount, body.note ?? null);
  } catch (e) {
    if (e instanceof IdempotencyMismatch) throw errors.idempotencyKeyReused(e.message);
    throw e;
  }
  app.log.info({ count: codes.length, micros: amount, first: codes[0].id }, 'redemption codes created');
  return {
    status: 201,
    body: { codes: codes.map((c) => ({ id: c.id, code: c.code, amount_usd: formatUsd(c.amount_micros) })) },
    headers: { 'cache-control': 'no-store' },
  };
};
