/**
 * Operators made and disabled through the admin API (owners; the CLI's `operators create` and `operators disable`
 * do the same from a shell). A new operator's first password is generated here, 144 random bits, answered once and
 * stored only as its scrypt hash; they enrol TOTP at their first sign-in.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import {
  createOperator,
  disableOperator,
  findOperatorByEmail,
  OperatorError,
  type Operator,
} from '../accounts/operators';
import { hashPassword } from '../accounts/passwords';
import { errors } from '../errors';

export async function addOperator(
  db: Knex,
  email: string,
  role: string,
): Promise<{ operator: Operator; password: string }> {
  const address = email.trim().toLowerCase();
  if (await findOperatorByEmail(db, address)) {
    throw errors.conflict(`An operator ${address} exists already`, 'operator_exists', 'email');
  }
  const password = crypto.randomBytes(18).toString('base64url');
  try {
    return { operator: await createOperator(db, address, role, await hashPassword(password)), password };
  } catch (e) {
    // What createOperator refuses is the request's: an address that is not one (the role is checked by the contract).
    if (e instanceof OperatorError) throw errors.invalidRequest(e.message, 'email');
    throw e;
  }
}

/** Disables an operator (their sessions end at once); an unknown id is a 404. */
export async function disableOperatorById(db: Knex, id: number): Promise<Operator> {
  try {
    return await disableOperator(db, id);
  } catch (e) {
    if (e instanceof OperatorError) throw errors.notFoundResource(`No operator ${id}`, 'id');
    throw e;
  }
}
