/**
 * Operators: the people who run the gateway, with a role (OperatorRole in the contract, most powerful first), a
 * scrypt password (passwords.ts) and a TOTP second factor (otplib, RFC 6238: 6 digits, 30 s steps, one step of clock
 * drift either way). Their sessions live apart from the console's (their own table and cookie), and a session
 * opened before the second factor was enrolled can do nothing but enrol it.
 *
 * The TOTP secret is shown once, as an otpauth:// URI, when enrolment starts; no answer or audit record carries it
 * afterwards. A code is accepted once: its time step is remembered, so a code seen over a shoulder cannot be replayed.
 *
 * With SWITCHYARD_SECRET_KEY set, the secret is stored sealed (secrets.ts, as the catalog's credentials are): a copy
 * of the database then yields no second factor. Secrets stored in the clear (before the key was set) keep working and
 * are sealed at the next enrolment or by `switchyard catalog rotate-secret` (resealTotpSecrets).
 */
import crypto from 'node:crypto';
import { sha256Hex } from '../digest';
import type { Knex } from 'knex';
import type { authenticator } from 'otplib';
import { OPERATOR_ROLES, type OperatorRole } from '../contract';
import { decrypt, encrypt, isSealed, SecretKeyError } from '../secrets';
import { insertId } from '../db/dialect';

export interface Operator {
  id: number;
  email: string;
  role: OperatorRole;
  totpEnabled: boolean;
  disabled: boolean;
  createdAt: number;
}

/** An operator as the sign-in reads it: with what is checked (never leaves this module's callers' handlers). */
export interface OperatorSecrets extends Operator {
  passwordHash: string;
  totpSecret: string | null;
  totpLastStep: number | null;
}

export interface OperatorSession {
  idHash: string;
  operatorId: number;
  csrfToken: string;
  /** The TOTP code was checked at sign-in (or enrolment was confirmed in this session). */
  secondFactor: boolean;
  expiresAt: number;
  operator: Operator;
}

export class OperatorError extends Error {}

const ID_FORMAT = /^[A-Za-z0-9_-]{43}$/;
const STEP_MS = 30_000;
let authenticatorWithWindow: typeof authenticator | undefined;
/** otplib, loaded at the first TOTP code checked or enrolled rather than at start-up. */
const totp = () =>
  (authenticatorWithWindow ??= (require('otplib') as typeof import('otplib')).authenticator.clone({ window: 1 }));

export const isOperatorRole = (r: string): r is OperatorRole => (OPERATOR_ROLES as readonly string[]).includes(r);

/** Whether `role` may do what needs `needed`: roles are ranked, most powerful first (OperatorRole's order). */
export const roleAllows = (role: OperatorRole, needed: OperatorRole): boolean =>
  OPERATOR_ROLES.indexOf(role) <= OPERATOR_ROLES.indexOf(needed);

function fromRow(r: Record<string, unknown>): OperatorSecrets {
  return {
    id: Number(r.id),
    email: String(r.email),
    role: String(r.role) as OperatorRole,
    totpEnabled: !!r.totp_enabled,
    disabled: !!r.disabled,
    createdAt: Number(r.created_at),
    passwordHash: String(r.password_hash),
    totpSecret: (r.totp_secret as string | null) ?? null,
    totpLastStep: r.totp_last_step === null || r.totp_last_step === undefined ? null : Number(r.totp_last_step),
  };
}

/** The operator without what is secret. */
export function publicOperator(o: OperatorSecrets): Operator {
  const { passwordHash: _p, totpSecret: _t, totpLastStep: _s, ...rest } = o;
  return rest;
}

export async function createOperator(db: Knex, email: string, role: string, passwordHash: string): Promise<Operator> {
  const e = email.trim().toLowerCase();
  if (!/^[^@\s]+@[^@\s]+$/.test(e) || e.length > 320) throw new OperatorError(`not an email address: ${email}`);
  if (!isOperatorRole(role)) throw new OperatorError(`--role must be one of ${OPERATOR_ROLES.join(', ')}`);
  if (await db('operators').where('email', e).first('id')) throw new OperatorError(`an operator ${e} exists`);
  const id = await insertId(db, 'operators', { email: e, role, password_hash: passwordHash, created_at: Date.now() });
  return (await getOperator(db, Number(id)))!;
}

export async function getOperator(db: Knex, id: number): Promise<Operator | null> {
  const row = await db('operators').where('id', id).first();
  return row ? publicOperator(fromRow(row)) : null;
}

export async function findOperatorByEmail(db: Knex, email: string): Promise<OperatorSecrets | null> {
  const row = await db('operators').where('email', email.trim().toLowerCase()).first();
  return row ? fromRow(row) : null;
}

export async function listOperators(db: Knex): Promise<Operator[]> {
  return (await db('operators').orderBy('id')).map((r: Record<string, unknown>) => publicOperator(fromRow(r)));
}

export async function setOperatorPassword(db: Knex, id: number, passwordHash: string): Promise<void> {
  await db('operators').where('id', id).update({ password_hash: passwordHash });
}

/** Disables an operator: its sessions end at once. */
export async function disableOperator(db: Knex, id: number): Promise<Operator> {
  const n = await db('operators').where('id', id).update({ disabled: true });
  if (!n) throw new OperatorError(`no operator ${id}`);
  await db('operator_sessions').where('operator_id', id).del();
  return (await getOperator(db, id))!;
}

/** A TOTP secret as stored: sealed under `key`, or as it is without one. */
const sealTotp = (secret: string, key: Buffer | null): string => (key ? encrypt(secret, key) : secret);

/** A stored TOTP secret in the clear; a SecretKeyError when it is sealed and `key` is missing or another. */
function openTotp(stored: string, key: Buffer | null): string {
  if (!isSealed(stored)) return stored;
  if (!key)
    throw new SecretKeyError("operators' TOTP secrets are stored encrypted, but SWITCHYARD_SECRET_KEY is not set");
  try {
    return decrypt(stored, key);
  } catch {
    throw new SecretKeyError(
      "an operator's TOTP secret cannot be decrypted with SWITCHYARD_SECRET_KEY (a different key?)",
    );
  }
}

/**
 * Checks a TOTP code against the operator's secret (opened with `key`: a SecretKeyError when it cannot be); a code of
 * a time step already used (or older) is refused, and the step of an accepted one is remembered (a conditional
 * update, so two sign-ins racing with one code: one wins).
 */
export async function useTotpCode(
  db: Knex,
  o: OperatorSecrets,
  code: string,
  key: Buffer | null,
  now = Date.now(),
): Promise<boolean> {
  if (!o.totpSecret || !/^\d{6}$/.test(code)) return false;
  const delta = totp().checkDelta(code, openTotp(o.totpSecret, key));
  if (delta === null) return false;
  const step = Math.floor(now / STEP_MS) + delta;
  if (o.totpLastStep !== null && step <= o.totpLastStep) return false;
  const n = await db('operators')
    .where('id', o.id)
    .andWhere((q) => q.whereNull('totp_last_step').orWhere('totp_last_step', '<', step))
    .update({ totp_last_step: step });
  return n === 1;
}

/**
 * Starts (or restarts) TOTP enrolment: a new secret (stored sealed under `key` when there is one), its otpauth:// URI;
 * not in force until confirmed.
 */
export async function startTotp(
  db: Knex,
  operatorId: number,
  issuer: string,
  key: Buffer | null,
): Promise<string | null> {
  const row = await db('operators').where('id', operatorId).first('email', 'totp_enabled');
  if (!row || row.totp_enabled) return null;
  const secret = totp().generateSecret();
  await db('operators')
    .where('id', operatorId)
    .update({ totp_secret: sealTotp(secret, key), totp_last_step: null });
  return totp().keyuri(String(row.email), issuer, secret);
}

/** Whether enrolment was started (a secret made, maybe not yet confirmed). */
export async function totpStarted(db: Knex, operatorId: number): Promise<boolean> {
  return !!(await db('operators').where('id', operatorId).first('totp_secret'))?.totp_secret;
}

/** Confirms enrolment with a code of the new secret: the second factor is in force from now on. */
export async function confirmTotp(db: Knex, operatorId: number, code: string, key: Buffer | null): Promise<boolean> {
  const row = await db('operators').where('id', operatorId).first();
  if (!row || row.totp_enabled) return false;
  if (!(await useTotpCode(db, fromRow(row), code, key))) return false;
  await db('operators').where('id', operatorId).update({ totp_enabled: true });
  return true;
}

/**
 * Every stored TOTP secret sealed under `to`: those sealed under `from` re-encrypted, those in the clear encrypted
 * (`switchyard catalog rotate-secret`, in its transaction). Returns how many were written.
 */
export async function resealTotpSecrets(trx: Knex, from: Buffer, to: Buffer): Promise<number> {
  const rows = await trx('operators').whereNotNull('totp_secret').select('id', 'email', 'totp_secret').forUpdate();
  for (const r of rows) {
    let secret: string;
    try {
      secret = openTotp(String(r.totp_secret), from);
    } catch (e) {
      // named, so that the operator running the rotation knows whose second factor is sealed under another key
      throw e instanceof SecretKeyError ? new SecretKeyError(`${e.message}: operator ${r.email}`) : e;
    }
    await trx('operators')
      .where('id', r.id)
      .update({ totp_secret: encrypt(secret, to) });
  }
  return rows.length;
}

export async function createOperatorSession(
  db: Knex,
  operatorId: number,
  secondFactor: boolean,
  ttlMs: number,
  now = Date.now(),
): Promise<{ id: string; csrfToken: string }> {
  const id = crypto.randomBytes(32).toString('base64url');
  const csrfToken = crypto.randomBytes(24).toString('base64url');
  await db('operator_sessions').insert({
    id_hash: sha256Hex(id),
    operator_id: operatorId,
    csrf_token: csrfToken,
    second_factor: secondFactor,
    created_at: now,
    expires_at: now + ttlMs,
  });
  if (Math.random() < 0.02)
    void db('operator_sessions')
      .where('expires_at', '<', now)
      .del()
      .catch(() => undefined);
  return { id, csrfToken };
}

/** The live session of a cookie value, with its operator, or null (unknown, expired, or the operator disabled). */
export async function findOperatorSession(
  db: Knex,
  id: string | undefined,
  now = Date.now(),
): Promise<OperatorSession | null> {
  if (!id || !ID_FORMAT.test(id)) return null;
  const row = await db('operator_sessions as s')
    .join('operators as o', 'o.id', 's.operator_id')
    .where('s.id_hash', sha256Hex(id))
    .andWhere('s.expires_at', '>', now)
    .andWhere('o.disabled', false)
    .first('s.id_hash', 's.csrf_token', 's.second_factor', 's.expires_at', 'o.*');
  if (!row) return null;
  return {
    idHash: row.id_hash,
    operatorId: Number(row.id),
    csrfToken: row.csrf_token,
    secondFactor: !!row.second_factor,
    expiresAt: Number(row.expires_at),
    operator: publicOperator(fromRow(row)),
  };
}

export async function markSecondFactor(db: Knex, idHash: string): Promise<void> {
  await db('operator_sessions').where('id_hash', idHash).update({ second_factor: true });
}

export async function deleteOperatorSession(db: Knex, idHash: string): Promise<void> {
  await db('operator_sessions').where('id_hash', idHash).del();
}

export async function rememberOperatorAddress(db: Knex, operatorId: number, address: string): Promise<void> {
  const now = Date.now();
  await db('operator_login_addresses')
    .insert({ operator_id: operatorId, address, last_at: now })
    .onConflict(['operator_id', 'address'])
    .merge({ last_at: now });
}

/** Whether the operator with this email signed in from `address` within `withinMs`. */
export async function knownOperatorAddress(db: Knex, email: string, address: string, withinMs: number) {
  const row = await db('operator_login_addresses as l')
    .join('operators as o', 'o.id', 'l.operator_id')
    .where('o.email', email.trim().toLowerCase())
    .andWhere('l.address', address)
    .andWhere('l.last_at', '>', Date.now() - withinMs)
    .first('l.operator_id');
  return !!row;
}

/** An identity at an OpenID provider, as its ID token (and userinfo) named it. */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string;
}

/**
 * The operator an OpenID identity signs in as: the one linked to it (issuer and subject), else — its first OpenID
 * sign-in — the operator of its email, unless that one is linked to another identity of the provider (an address
 * given to someone else there takes over nobody here): then an OperatorError.
 */
export async function findOidcOperator(db: Knex, id: OidcIdentity): Promise<OperatorSecrets | null> {
  const linked = await db('operators').where({ oidc_issuer: id.issuer, oidc_subject: id.subject }).first();
  if (linked) return fromRow(linked);
  const byEmail = await db('operators').where('email', id.email.trim().toLowerCase()).first();
  if (byEmail?.oidc_subject)
    throw new OperatorError(`the operator ${byEmail.email} signs in as another identity of the OpenID provider`);
  return byEmail ? fromRow(byEmail) : null;
}

/**
 * Records an OpenID sign-in: the operator found (findOidcOperator) is linked to the identity and takes the role its
 * groups give (and the provider's email, unless another operator has it); none found, one is made, with no password
 * (an empty hash, which no password matches: it signs in through the provider only).
 */
export async function saveOidcOperator(
  db: Knex,
  id: OidcIdentity,
  role: OperatorRole,
  found: OperatorSecrets | null,
): Promise<Operator> {
  const email = id.email.trim().toLowerCase();
  const link = { role, oidc_issuer: id.issuer, oidc_subject: id.subject };
  if (!found) {
    const newId = await insertId(db, 'operators', { email, password_hash: '', ...link, created_at: Date.now() });
    return (await getOperator(db, Number(newId)))!;
  }
  const taken = email !== found.email && (await db('operators').where('email', email).first('id'));
  await db('operators')
    .where('id', found.id)
    .update({ ...link, ...(!taken && { email }) });
  return (await getOperator(db, found.id))!;
}

/** Ends every session of the operator but `keep` (after a password change: a stolen session ends with it). */
export async function endOtherOperatorSessions(db: Knex, operatorId: number, keep: string): Promise<void> {
  await db('operator_sessions').where('operator_id', operatorId).andWhereNot('id_hash', keep).del();
}
