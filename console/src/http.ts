/**
 * The client both web apps call their API with: same-origin fetch, the session cookie travels by itself, and every
 * state-changing call carries the CSRF token the session handed out. Errors come back as
 * `{error: {message, type, param, code}}` and are thrown as ApiError (with `retry-after`, for a 429).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string | null = null,
    readonly param: string | null = null,
    readonly code: string | null = null,
    /** Seconds to wait before trying again (a 429's retry-after), or null. */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

export type Query = Record<string, string | number | undefined | null>;

export interface CallOptions {
  body?: unknown;
  query?: Query;
  /** A 401 is an answer of this call (a wrong password), not a sign that the session ended. */
  quiet401?: boolean;
  headers?: Record<string, string>;
}

export class ApiClient {
  csrf: string | null = null;
  /** Called when an authenticated call answers 401 (the session expired or was ended elsewhere). */
  onUnauthorized: (() => void) | null = null;

  constructor(readonly base: string) {}

  url(path: string, query: Query = {}): string {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
    return `${this.base}${path}${qs.size ? `?${qs}` : ''}`;
  }

  /** The answer as JSON (undefined for a 204). */
  async call<T>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
    const res = await this.send(method, path, opts, 'application/json');
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    try {
      return (text ? JSON.parse(text) : undefined) as T;
    } catch {
      return undefined as T;
    }
  }

  /** The answer as text, asked for as `accept` (CSV downloads). */
  async text(path: string, query: Query, accept: string): Promise<string> {
    return (await this.send('GET', path, { query }, accept)).text();
  }

  private async send(method: string, path: string, opts: CallOptions, accept: string): Promise<Response> {
    const headers: Record<string, string> = { accept, ...opts.headers };
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && this.csrf) headers['x-csrf-token'] = this.csrf;
    let res: Response;
    try {
      res = await fetch(this.url(path, opts.query), {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        credentials: 'same-origin',
      });
    } catch {
      throw new ApiError(0, 'Could not reach Switchyard. Check your connection and try again.');
    }
    if (!res.ok) throw await this.failure(res, opts);
    return res;
  }

  private async failure(res: Response, opts: CallOptions): Promise<ApiError> {
    let e: { message?: string; type?: string; param?: string; code?: string } | undefined;
    try {
      e = ((await res.json()) as { error?: typeof e }).error;
    } catch {
      e = undefined;
    }
    if (res.status === 401 && !opts.quiet401) this.onUnauthorized?.();
    const retry = Number(res.headers.get('retry-after'));
    return new ApiError(
      res.status,
      e?.message || `The request failed (HTTP ${res.status}).`,
      e?.type ?? null,
      e?.param ?? null,
      e?.code ?? null,
      Number.isFinite(retry) && retry > 0 ? retry : null,
    );
  }
}
