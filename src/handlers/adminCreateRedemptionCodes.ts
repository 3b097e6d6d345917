import { formatUsd } from '../money';
import { createCodesOnce } from '../services/admin';
import { csvLine, wantsCsv } from '../services/adminPages';
import { operatorActor } from '../services/audit';
import { IdempotencyMismatch } from '../services/idempotency';
import { idempotencyKey, usdParam } from '../services/views';
import { errors } from '../errors';
import type { Handler } from './types';

/**
 * POST /admin/api/redemption-codes: a batch of single-use codes, shown this once (or again to a retry with the same
 * Idempotency-Key), as JSON or as CSV to download. The audit log keeps the batch as JSON, each code masked.
 */
export const adminCreateRedemptionCodes: Handler<'adminCreateRedemptionCodes'> = async (input) => {
  const { body, app, headers, query, operator } = input;
  const amount = usdParam(body.usd, 'usd');
  if (amount === 0) throw errors.invalidRequest("Invalid value for 'usd': must be more than 0", 'usd');
  const by = operator ? operatorActor(operator.operator) : 'admin-token';
  let codes;
  try {
    codes = await createCodesOnce(app.db, idempotencyKey(headers), body.count, amount, body.note ?? null, by);
  } catch (e) {
    if (e instanceof IdempotencyMismatch) throw errors.idempotencyKeyReused(e.message);
    throw e;
  }
  app.log.info({ count: codes.length, micros: amount, first: codes[0].id }, 'redemption codes created');
  const made = {
    batch: codes[0].id,
    codes: codes.map((c) => ({ id: c.id, code: c.code, amount_usd: formatUsd(c.amount_micros) })),
  };
  const noStore = { 'cache-control': 'no-store' };
  if (!wantsCsv(query.format, headers)) return { status: 201, body: made, headers: noStore };
  const csv = [
    'id,batch,code,amount_usd\r\n',
    ...made.codes.map((c) => csvLine([c.id, made.batch, c.code, c.amount_usd])),
  ];
  return {
    status: 201,
    body: csv.join(''),
    contentType: 'text/csv; charset=utf-8',
    headers: { ...noStore, 'content-disposition': `attachment; filename="codes-${made.batch}.csv"` },
    audit: made,
  };
};
