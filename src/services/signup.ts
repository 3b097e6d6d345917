/**
 * What the console's sign-up mails: the link that confirms an address (and pays the sign-up credits), and the link
 * that sets a new password. Links point at the console's own pages, which call the API with the token.
 */
import type { Knex } from 'knex';
import { getAccount, verifyEmailWithin, withSignupCredits, type Account } from '../accounts/accounts';
import { consumeToken, issuedTo, issueToken, peekToken } from '../accounts/emailTokens';
import { hashPassword, passwordProblem } from '../accounts/passwords';
import type { ConsoleConfig } from '../config';
import type { Mailer } from './mailer';

export async function mailVerification(
  db: Knex,
  mailer: Mailer,
  account: Pick<Account, 'id' | 'email'>,
  origin: string,
): Promise<void> {
  const token = await issueToken(db, account.id, 'verify');
  await mailer.send({
    to: account.email,
    subject: 'Confirm your Switchyard address',
    text: `Open this link to confirm your address and receive your sign-up credits (valid 48 hours, once):\n\n${origin}/console/verify?token=${token}\n\nIf you did not register, ignore this message.`,
  });
}

export async function mailPasswordReset(
  db: Knex,
  mailer: Mailer,
  account: Pick<Account, 'id' | 'email'>,
  origin: string,
): Promise<void> {
  const token = await issueToken(db, account.id, 'reset');
  await mailer.send({
    to: account.email,
    subject: 'Reset your Switchyard password',
    text: `Open this link to set a new password (valid 1 hour, once):\n\n${origin}/console/reset?token=${token}\n\nIf you did not ask for it, ignore this message: your password stays as it is.`,
  });
}

/**
 * Confirms the address of a verification token's account and pays its sign-up credits; null for a bad token. The
 * token is used up in the same transaction: a confirmation that fails leaves the link working. A link opened again
 * (used, superseded or expired) whose account's address is confirmed is `already`: the user's goal is reached, and
 * "invalid" would send them looking for a problem that is not there. Nothing is paid then.
 */
export async function confirmAddress(
  db: Knex,
  token: string,
  c: ConsoleConfig,
): Promise<{ accountId: number; already: boolean } | null> {
  const accountId = await withSignupCredits(db, async (trx) => {
    const id = await consumeToken(trx, token, 'verify');
    if (id !== null) await verifyEmailWithin(trx, id, signupCredits(c));
    return id;
  });
  if (accountId !== null) return { accountId, already: false };
  const earlier = await issuedTo(db, token, 'verify');
  const account = earlier === null ? null : await getAccount(db, earlier);
  return account && account.verified_at !== null ? { accountId: account.id, already: true } : null;
}

/** Whether a reset link still works (its token live, its account there), without using it up. */
export async function resetLinkWorks(db: Knex, token: string): Promise<boolean> {
  const accountId = await peekToken(db, token, 'reset');
  return accountId !== null && (await getAccount(db, accountId)) !== null;
}

export const signupCredits = (c: ConsoleConfig) => ({
  starterMicros: c.starter_credits_micros,
  referralMicros: c.referral_credits_micros,
  referralsPerMonth: c.referrals_per_month,
});

/**
 * Sets a new password with a reset link's token: `invalid` for an unknown, used or expired token; a password problem
 * (too weak) leaves the token working, so the owner can try another password with the same link. Otherwise, in one
 * transaction, the token is used up, the password set, every session of the account ended, and the address counts as
 * confirmed (the link reached it).
 */
export async function resetPassword(
  db: Knex,
  token: string,
  password: string,
  c: ConsoleConfig,
): Promise<{ accountId: number; email: string } | { invalid: true } | { problem: string }> {
  const accountId = await peekToken(db, token, 'reset');
  const account = accountId === null ? null : await getAccount(db, accountId);
  if (!account) return { invalid: true };
  const problem = await passwordProblem(password, account.email);
  if (problem) return { problem };
  const passwordHash = await hashPassword(password);
  const done = await withSignupCredits(db, async (trx) => {
    if ((await consumeToken(trx, token, 'reset')) !== account.id) return false; // used meanwhile
    await trx('accounts').where('id', account.id).update({ password_hash: passwordHash });
    await trx('sessions').where('account_id', account.id).del();
    await verifyEmailWithin(trx, account.id, signupCredits(c));
    return true;
  });
  return done ? { accountId: account.id, email: account.email } : { invalid: true };
}
