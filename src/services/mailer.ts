/**
 * Outgoing mail (nodemailer over SMTP, `mail.smtp_url`): the verification and password-reset links. Without an
 * SMTP server the messages are written to the log instead (one warning at start-up says so), so a fresh install
 * works without one — and since credits wait for a confirmed address, it is still not farmable.
 */
import type { Logger } from 'pino';
import type { MailConfig } from '../config';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export class Mailer {
  private transport: { sendMail(m: Mail & { from: string }): Promise<unknown> } | null = null;

  constructor(
    private readonly config: MailConfig,
    private readonly log: Logger,
  ) {}

  /** Says once, at start-up, where mail goes when there is no SMTP server. */
  announce(): void {
    if (!this.config.smtp_url)
      this.log.warn('mail: no mail.smtp_url configured; verification and password-reset links are written to this log');
  }

  async send(mail: Mail): Promise<void> {
    if (!this.config.smtp_url) {
      this.log.warn({ to: mail.to, subject: mail.subject, text: mail.text }, 'mail (no SMTP server configured)');
      return;
    }
    if (!this.transport) {
      const nodemailer = await import('nodemailer');
      this.transport = nodemailer.createTransport(this.config.smtp_url);
    }
    await this.transport.sendMail({ from: this.config.from, ...mail });
  }
}
