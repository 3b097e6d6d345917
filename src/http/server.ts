/**
 * The HTTP server. Hapi owns the listener, start and stop, and serves what is not the API: the console's static
 * files, the operational endpoints (/healthz, /readyz, /metrics) and unknown paths (404), with its errors plugin
 * (request ids, the error shape, the log line). The API of the contract (api.ts) is dispatched first, on Node's
 * own request and response objects, ahead of Hapi's request lifecycle; a graceful stop waits for its requests.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import Hapi from '@hapi/hapi';
import { errors } from '../errors';
import type { App } from '../services/app';
import { Api } from './api';
import { consoleStatic } from './consoleStatic';
import { errorsPlugin } from './errors';
import { opsPlugin } from './ops';

export { CONTRACT } from './api';

declare module '@hapi/hapi' {
  interface ServerApplicationState {
    /** The API of the contract, served ahead of Hapi. */
    api: Api;
  }
}

export interface ServerOptions {
  port?: number;
  host?: string;
}

export async function buildServer(app: App, opts: ServerOptions = {}): Promise<Hapi.Server> {
  const server = Hapi.server({
    port: opts.port ?? 8080,
    host: opts.host ?? '127.0.0.1',
    routes: { timeout: { server: false, socket: false } },
    router: { stripTrailingSlash: true },
  });
  await server.register({ plugin: errorsPlugin, options: { app } });
  await server.register({ plugin: consoleStatic, options: { captcha: app.config.console.captcha?.provider ?? null } }); // GET /console/... and /admin/... from their builds (never their /api/...)
  await server.register({ plugin: opsPlugin, options: { app } }); // /healthz, /readyz, /metrics
  server.route({
    method: '*',
    path: '/{any*}',
    options: { state: { parse: false, failAction: 'ignore' } },
    handler: (request) => {
      throw errors.notFound(request.path);
    },
  });
  const api = (server.app.api = await Api.load(app));
  inFront(server, (req, res) => api.dispatch(req, res));
  // Requests of the API in flight finish before Hapi closes the connections (within the grace period).
  server.ext('onPreStop', () => api.idle(app.config.server.shutdown_grace_ms));
  return server;
}

/** Puts `first` in front of Hapi on the listener: what it does not take (returns false) goes on to Hapi. */
function inFront(server: Hapi.Server, first: (req: IncomingMessage, res: ServerResponse) => boolean): void {
  for (const event of ['request', 'checkContinue'] as const) {
    const hapi = server.listener.listeners(event) as ((req: IncomingMessage, res: ServerResponse) => void)[];
    server.listener.removeAllListeners(event);
    // Expect: 100-continue: Hapi answers it for its own requests; the API when it reads the body (api.ts, readBody).
    server.listener.on(event, (req: IncomingMessage, res: ServerResponse) => {
      if (!first(req, res)) for (const h of hapi) h(req, res);
    });
  }
}
