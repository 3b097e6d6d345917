/** A browser-like client of the console API: keeps the session cookie and sends the CSRF token, like the web UI. */
import crypto from 'node:crypto';
import { MAILBOXES, mailedToken } from './app';

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
  cookies: string[];
}

export const uniqueEmail = (tag = 'user') => `${tag}-${crypto.randomUUID()}@example.com`;
export const PASSWORD = 'correct horse 42';

export class ConsoleClient {
  cookie: string | null = null;
  csrf: string | null = null;
  account: any = null;

  constructor(readonly baseUrl: string) {}

  /** `csrf: false` leaves the header out; a string sends that value instead of the session's token. */
  async call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    o: { csrf?: boolean | string; headers?: Record<string, string> } = {},
  ): Promise<Answer<T>> {
    const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.cookie) headers.cookie = this.cookie;
    const csrf = typeof o.csrf === 'string' ? o.csrf : o.csrf === false ? null : this.csrf;
    if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf;
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const cookies = res.headers.getSetCookie();
    for (const c of cookies) {
      const [pair] = c.split(';');
      this.cookie = pair.endsWith('=') ? null : pair;
    }
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers, cookies };
  }

  get = <T = any>(path: string) => this.call<T>('GET', path);
  post = <T = any>(path: string, body?: unknown, o?: { csrf?: boolean | string }) =>
    this.call<T>('POST', path, body, o);
  patch = <T = any>(path: string, body?: unknown, o?: { csrf?: boolean | string }) =>
    this.call<T>('PATCH', path, body, o);
  del = <T = any>(path: string, o?: { csrf?: boolean | string }) => this.call<T>('DELETE', path, undefined, o);

  /**
   * Registers (and logs in), then — as its owner would — opens the confirmation link the gateway mailed, unless
   * `verify` is false: the sign-up credits come with it. `this.account` is as the console shows it afterwards.
   */
  async register(
    email = uniqueEmail(),
    password = PASSWORD,
    referral_code?: string,
    o: { verify?: boolean } = {},
  ): Promise<Answer> {
    const r = await this.post('/console/api/register', {
      email,
      password,
      ...(referral_code !== undefined && { referral_code }),
    });
    if (r.status === 201) {
      this.csrf = r.body.csrf_token;
      this.account = r.body.account;
      if (o.verify !== false) {
        const mails = MAILBOXES.get(this.baseUrl);
        const token = mails && mailedToken(mails, r.body.account.email, '/console/verify');
        if (token) {
          const v = await this.post('/console/api/verify-email', { token }, { csrf: false });
          if (v.status !== 200) throw new Error(`verify-email: ${v.status} ${JSON.stringify(v.body)}`);
          this.account = (await this.get('/console/api/account')).body;
          r.body.account = this.account;
        }
      }
    }
    return r;
  }

  async login(email: string, password = PASSWORD): Promise<Answer> {
    const r = await this.post('/console/api/login', { email, password });
    if (r.status === 200) {
      this.csrf = r.body.csrf_token;
      this.account = r.body.account;
    }
    return r;
  }
}

/** A logged-in client of a freshly registered account. */
export async function registered(baseUrl: string, referral?: string): Promise<ConsoleClient & { email: string }> {
  const c = new ConsoleClient(baseUrl) as ConsoleClient & { email: string };
  c.email = uniqueEmail();
  const r = await c.register(c.email, PASSWORD, referral);
  if (r.status !== 201) throw new Error(`register: ${r.status} ${JSON.stringify(r.body)}`);
  return c;
}
