/**
 * A real SMTP server on loopback (smtp-server, from the nodemailer project) that keeps what it receives: the tests
 * read the gateway's mail from it, as a user reads their inbox. No TLS, no authentication (loopback only).
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Received {
  from: string;
  to: string[];
  /** The raw message (headers and body) as it came over SMTP. */
  raw: string;
  /** The body with quoted-printable soft line breaks and escapes undone. */
  text: string;
}

export class FakeSmtp {
  readonly messages: Received[] = [];
  private server: SMTPServer | null = null;
  url = '';

  async start(): Promise<this> {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        let raw = '';
        stream.setEncoding('utf8');
        stream.on('data', (d: string) => (raw += d));
        stream.on('end', () => {
          const body = raw
            .split(/\r?\n\r?\n/)
            .slice(1)
            .join('\n\n');
          const text = body
            .replace(/=\r?\n/g, '')
            .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
          this.messages.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            raw,
            text,
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.url = `smtp://127.0.0.1:${(this.server.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The token of the newest link to `path` in a message to `to`. */
  token(to: string, path: string): string | null {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i];
      if (!m.to.includes(to)) continue;
      const found = new RegExp(`${path.replace(/\//g, '\\/')}\\?token=([A-Za-z0-9_-]+)`).exec(m.text);
      if (found) return found[1];
    }
    return null;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
