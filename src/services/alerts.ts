/**
 * Low-balance alerts: an account that set a threshold is mailed once when its balance falls below it; the alert is
 * armed again when the balance is back at or above it (a top-up). Checked every minute by every process: the
 * conditional update makes exactly one of them send each alert.
 */
import type { Knex } from 'knex';
import { formatUsd } from '../money';
import type { Mailer } from './mailer';

export async function checkLowBalances(
  db: Knex,
  mailer: Mailer,
  consoleUrl: string | null,
  onError: (e: Error) => void = () => undefined,
): Promise<number> {
  await db('accounts')
    .where('low_balance_alerted', true)
    .whereNotNull('low_balance_micros')
    .andWhere('balance_micros', '>=', db.ref('low_balance_micros'))
    .update({ low_balance_alerted: false });
  const due = (await db('accounts')
    .where('low_balance_alerted', false)
    .andWhere('status', 'active')
    .whereNotNull('low_balance_micros')
    .andWhere('balance_micros', '<', db.ref('low_balance_micros'))
    .limit(500)
    .select('id', 'email', 'balance_micros', 'low_balance_micros')) as {
    id: number;
    email: string;
    balance_micros: unknown;
    low_balance_micros: unknown;
  }[];
  let sent = 0;
  for (const a of due) {
    if (!(await db('accounts').where({ id: a.id, low_balance_alerted: false }).update({ low_balance_alerted: true })))
      continue; // another process took it
    try {
      await mailer.send({
        to: a.email,
        subject: 'Your Switchyard balance is low',
        text: `Your balance is ${formatUsd(Number(a.balance_micros))} USD, below the ${formatUsd(Number(a.low_balance_micros))} USD you asked to be told about.${consoleUrl ? `\n\nTop up: ${consoleUrl}/console/topup` : ''}\n\nYou will hear again only after it has been back above that amount.`,
      });
    } catch (e) {
      // Not sent (the SMTP server is away): armed again, so the next check tries again; the others still go.
      await db('accounts').where('id', a.id).update({ low_balance_alerted: false });
      onError(e as Error);
      continue;
    }
    sent++;
  }
  return sent;
}
