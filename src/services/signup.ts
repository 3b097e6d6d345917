/**
 * What the console's sign-up mails: the link that confirms an address (and pays the sign-up credits), and the link
 * that sets a new password. Links point at the console's own pages, which call the API with the token.
 */
import type { Knex } from 'knex';
import { verifyEmail, type Account } from '../accounts/accounts';
import { consumeToken, issueToken } from '../accounts/emailTokens';
import type { ConsoleConfig } from '../config';
import type { Mailer } from './mailer';

export async function mailVerification(db: Knex, mailer: Mailer, account: Pick<Account, 'id' | 'email'>, origin: string): Promise<void> {
  const token = await issueToken(db, account.id, 'verify');
  await mailer.send({
    to: account.email,
    subject: 'Confirm your Switchyard address',
    text: `Open this link to confirm your address and receive your sign-up credits (valid 48 hours, once):\n\n${origin}/console/verify?token=${token}\n\nIf you did not register, ignore this message.`,
  });
}

export async function mailPasswordReset(db: Knex, mailer: Mailer, account: Pick<Account, 'id' | 'email'>, origin: string): Promise<void> {
  const token = await issueToken(db, account.id, 'reset');
  await mailer.send({
    to: account.email,
    subject: 'Reset your Switchyard password',
    text: `Open this link to set a new password (valid 1 hour, once):\n\n${origin}/console/reset?token=${token}\n\nIf you did not ask for it, ignore this message: your password stays as it is.`,
  });
}

/** Confirms the address of a verification token's account and pays its sign-up credits; null for a bad token. */
export async function confirmAddress(db: Knex, token: string, c: ConsoleConfig): Promise<number | null> {
  const accountId = await consumeToken(db, token, 'verify');
  if (accountId === null) return null;
  await verifyEmail(db, accountId, signupCredits(c));
  return accountId;
}

export const signupCredits = (c: ConsoleConfig) => ({ starterMicros: c.starter_credits_micros, referralMicros: c.referral_credits_micros, referralsPerMonth: c.referrals_per_month });
