/**
 * The baseline of the benchmark: a bare Node reverse proxy with no logic at all. node:http server, http.request
 * through one keep-alive http.Agent (256 sockets at most), request and response bodies piped, every /v1/* request
 * forwarded as it is to the upstream (method, path, headers). Nothing a gateway does can cost less than this in
 * Node, so the gateway's numbers are reported as ratios to it.
 *
 * Run as a process: `node test/bench/proxy.mjs --upstream http://127.0.0.1:PORT [--port 0]`; it prints
 * {"url": "http://127.0.0.1:PORT/v1", "pid": N} on stdout once it listens, and stops on SIGTERM/SIGINT.
 */
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { upstream: { type: 'string' }, port: { type: 'string', default: '0' } } });
if (!values.upstream) {
  process.stderr.write('proxy: --upstream http://host:port is required\n');
  process.exit(2);
}
const target = new URL(values.upstream);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256 });

const server = http.createServer((req, res) => {
  if (!req.url.startsWith('/v1/')) {
    res.writeHead(404, { 'content-type': 'text/plain' });
    return void res.end('not found\n');
  }
  const headers = { ...req.headers };
  delete headers.connection; // hop-by-hop: the agent manages the upstream connection
  const up = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent },
    (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    },
  );
  up.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`upstream error: ${e.message}\n`);
  });
  // A client that leaves before its answer is complete (a load generator stopping mid-request) takes the upstream
  // request with it. Left alone, its upstream response would stay paused once unpiped and keep its pooled socket
  // for ever: after a few runs every one of the agent's sockets was held so, and the proxy answered nothing.
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  req.pipe(up);
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 61_000;
server.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(
    `${JSON.stringify({ url: `http://127.0.0.1:${server.address().port}/v1`, pid: process.pid })}\n`,
  );
});
const stop = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.once('disconnect', stop);
