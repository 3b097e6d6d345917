/**
 * The HTTP server: Hapi with five plugins — errors (request ids, the OpenAI error shape, the log line, request
 * metrics), security (the caller, checked before the body is read), the API of the contract, the operational
 * endpoints (/healthz, /readyz, /metrics) and the console's static files.
 */
import Hapi from '@hapi/hapi';
import type { App } from '../services/app';
import { apiPlugin } from './api';
import { consoleStatic } from './consoleStatic';
import { errorsPlugin } from './errors';
import { opsPlugin } from './ops';
import { securityPlugin } from './security';

export { CONTRACT } from './api';

export interface ServerOptions {
  port?: number;
  host?: string;
}

export async function buildServer(app: App, opts: ServerOptions = {}): Promise<Hapi.Server> {
  const server = Hapi.server({
    port: opts.port ?? 8080,
    host: opts.host ?? '127.0.0.1',
    // text/* counts as compressible, and gzip would hold SSE chunks back until the stream ends.
    mime: { override: { 'text/event-stream': { source: 'iana', compressible: false } } },
    routes: { timeout: { server: false, socket: false } },
    router: { stripTrailingSlash: true },
  });
  await server.register({ plugin: errorsPlugin, options: { app } });
  await server.register({ plugin: securityPlugin, options: { app } });
  await server.register({ plugin: consoleStatic, options: { captcha: app.config.console.captcha?.provider ?? null } }); // GET /console/... from console/dist (never /console/api/...)
  await server.register({ plugin: opsPlugin, options: { app } }); // /healthz, /readyz, /metrics
  await server.register({ plugin: apiPlugin, options: { app } });
  return server;
}
