/**
 * Serves the two web apps built by `make build`: the console (console/dist) at /console and the operators' app
 * (console/admin/dist) at /admin. GET and HEAD only; /console/api/... and /admin/api/... are never touched here and
 * reach the API. Paths that name no file get the app's index.html, so its own routes (/console/keys, /admin/accounts/42)
 * load on refresh; a missing file with an extension (/console/assets/x.js) is a plain 404.
 *
 * It runs as an onRequest extension rather than a route: a `/console/{path*}` route would be more specific than the
 * API's catch-all `/{any*}` and would swallow GET /console/api/... as well.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Plugin, Request, ResponseObject, ResponseToolkit } from '@hapi/hapi';

export const CONSOLE_DIST = path.resolve(__dirname, '..', '..', 'console', 'dist');
export const ADMIN_DIST = path.resolve(__dirname, '..', '..', 'console', 'admin', 'dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

// The console loads nothing from elsewhere and talks only to its own origin.
/**
 * Nothing but the gateway itself — except, when registration asks for a CAPTCHA, the provider's widget (its script,
 * its frame, and for hCaptcha its API), as the providers document for a CSP.
 */
const WIDGET: Record<string, string> = {
  turnstile: 'https://challenges.cloudflare.com',
  hcaptcha: 'https://hcaptcha.com https://*.hcaptcha.com',
};
export function csp(captcha: string | null): string {
  const widget = captcha ? ` ${WIDGET[captcha]}` : '';
  return [
    "default-src 'self'",
    `script-src 'self'${widget}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    `connect-src 'self'${captcha === 'hcaptcha' ? widget : ''}`,
    `frame-src${captcha ? widget : " 'none'"}`,
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    // Stripe Checkout is reached by navigation (location.assign), which form-action and connect-src do not restrict.
    "form-action 'self'",
  ].join('; ');
}

/** A web app: where it is served, where its build is, and its page's Content-Security-Policy. */
export interface WebApp {
  prefix: string;
  dir: string;
  policy: string;
}

/** True for the paths `prefix`'s app serves: `prefix` and below, except `prefix`/api and below (its API). */
export function isAppPath(p: string, prefix: string): boolean {
  if (p !== prefix && !p.startsWith(`${prefix}/`)) return false;
  return !(p === `${prefix}/api` || p.startsWith(`${prefix}/api/`));
}

/** True for the paths the console serves: /console and /console/..., except /console/api and below. */
export const isConsolePath = (p: string): boolean => isAppPath(p, '/console');

export interface ConsoleStaticOptions {
  /** The built console; default console/dist of this checkout. */
  dir?: string;
  /** The built operators' app; default console/admin/dist of this checkout. */
  adminDir?: string;
  /** The CAPTCHA provider registration uses, if any: its widget is allowed by the console page's CSP. */
  captcha?: string | null;
}

export const consoleStatic: Plugin<ConsoleStaticOptions> = {
  name: 'switchyard-console-static',
  register(server, opts) {
    const apps: WebApp[] = [
      { prefix: '/console', dir: path.resolve(opts.dir ?? CONSOLE_DIST), policy: csp(opts.captcha ?? null) },
      // The operators' app never shows a CAPTCHA: the console's policy without any widget.
      { prefix: '/admin', dir: path.resolve(opts.adminDir ?? ADMIN_DIST), policy: csp(null) },
    ];
    server.ext('onRequest', async (request, h) => {
      if (request.method !== 'get' && request.method !== 'head') return h.continue;
      const app = apps.find((a) => isAppPath(request.path, a.prefix));
      if (!app) return h.continue;
      return (await serve(app, request, h)).takeover();
    });
  },
};

async function serve({ prefix, dir, policy }: WebApp, request: Request, h: ResponseToolkit): Promise<ResponseObject> {
  let rel: string;
  try {
    rel = decodeURIComponent(request.path.slice(prefix.length));
  } catch {
    return notFound(h);
  }
  if (rel.includes('\0')) return notFound(h);
  const file = path.join(dir, rel);
  if (file !== dir && !file.startsWith(dir + path.sep)) return notFound(h);

  if (rel && !rel.endsWith('/')) {
    const found = await fileAt(file);
    if (found) return send(h, file, found, rel.startsWith('/assets/'), policy);
    // Something that looks like a file (has an extension) and is not there: a real 404, not the page.
    if (path.extname(rel)) return notFound(h);
  }
  const index = path.join(dir, 'index.html');
  const found = await fileAt(index);
  if (!found) {
    const what = prefix === '/admin' ? "operators' app" : 'web console';
    return h.response(`The ${what} is not built: run \`make build\`.\n`).code(404).type('text/plain; charset=utf-8');
  }
  return send(h, index, found, false, policy);
}

async function fileAt(file: string): Promise<{ size: number; mtime: Date } | null> {
  try {
    const st = await fs.stat(file);
    return st.isFile() ? { size: st.size, mtime: st.mtime } : null;
  } catch {
    return null;
  }
}

async function send(
  h: ResponseToolkit,
  file: string,
  st: { size: number; mtime: Date },
  immutable: boolean,
  policy: string,
): Promise<ResponseObject> {
  const etag = `${st.size.toString(16)}-${Math.floor(st.mtime.getTime()).toString(16)}`;
  const modified = st.mtime.toUTCString();
  // Before routing, Hapi's own conditional-request check does not run: h.entity() answers 304 when it matches.
  const unmodified = h.entity({ etag, modified });
  if (unmodified) return unmodified as ResponseObject;
  const body = await fs.readFile(file);
  const type = TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
  const res = h
    .response(body)
    .type(type)
    .etag(etag)
    .header('last-modified', modified)
    // Hashed file names under assets/ never change; everything else is checked on every load.
    .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
    .header('x-content-type-options', 'nosniff');
  if (type.startsWith('text/html')) {
    res
      .header('content-security-policy', policy)
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'same-origin');
  }
  return res;
}

function notFound(h: ResponseToolkit): ResponseObject {
  return h.response('Not found\n').code(404).type('text/plain; charset=utf-8').header('cache-control', 'no-cache');
}
