/**
 * HAProxy (Debian's `haproxy` package; `bash scripts/services.sh haproxy` installs it) in front of the gateway
 * nodes, with the configuration the README's deployment section shows: health checks on /readyz, retries only where
 * no upstream cost can be doubled, timeouts long enough for streams. Its configuration, stats socket and log live
 * in a temporary directory of the test's own.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const HAPROXY = process.env.HAPROXY_PATH || '/usr/sbin/haproxy';

/** Installs HAProxy the way `make cluster` does when it is missing (apt-get, as root). */
export function ensureHaproxy(): void {
  if (fs.existsSync(HAPROXY)) return;
  execFileSync('bash', [path.join(__dirname, '..', '..', 'scripts', 'services.sh'), 'haproxy'], { stdio: 'inherit' });
}

/** The OpenAI error shape, for the answers HAProxy makes itself. */
const error = (message: string, type: string, code: string) =>
  JSON.stringify({ error: { message, type, param: null, code } });

/**
 * The configuration. Why each part:
 * - `option httpchk GET /readyz` every second, down after 2 failures: a node that is stopping (SIGTERM: /readyz
 *   answers 503 at once) or has lost its database is drained within about two seconds. `timeout check 2s`: /readyz
 *   itself waits up to 1 s for the database, and a busy node must not be taken for a dead one.
 * - `retry-on conn-failure empty-response` with `retries`, but `disable-l7-retry` for anything but GET and HEAD: a
 *   POST that reached a node which then died may have reached the upstream (and been billed there); resending it
 *   could pay for it twice. Only a connection that was never made (connection refused: the node is down and not yet
 *   seen so) is safe to try on another node (`option redispatch`).
 * - `timeout server` longer than the longest generation (the gateway's own `total_ms` is 600 s), so streams are not
 *   cut by the balancer; `timeout connect` short, so a dead node costs little.
 * - `http-reuse never`: a request is never written onto a pooled connection to a node that has just died (which
 *   would fail it as if it had been in flight).
 * - Its own 502 and 503 in the OpenAI error shape: 502 when the node answering went away (the request may have
 *   been served upstream: the client decides whether to retry), 503 when no node is up (retry later).
 * - `x-switchyard-node` on every answer (the node's name), for the operator's logs and this test.
 */
export function haproxyConfig(dir: string, port: number, nodes: number[]): string {
  return `global
  maxconn 4000
  stats socket ${path.join(dir, 'haproxy.sock')} mode 600 level admin
  log stdout format raw local0

defaults
  mode http
  log global
  option httplog
  timeout connect 2s
  timeout client 660s
  timeout server 660s
  timeout http-request 10s
  timeout http-keep-alive 60s
  timeout queue 10s
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response
  http-error status 502 content-type application/json string '${error('The gateway node serving this request went away; it may have reached the upstream', 'server_error', 'node_connection_lost')}'
  http-error status 503 content-type application/json string '${error('No gateway node is available; try again later', 'service_unavailable', 'service_unavailable')}'

frontend switchyard
  bind 127.0.0.1:${port}
  default_backend switchyard_nodes

backend switchyard_nodes
  balance leastconn
  http-reuse never
  option httpchk GET /readyz
  http-check expect status 200
  http-request disable-l7-retry unless METH_GET || METH_HEAD
  http-after-response set-header x-switchyard-node %s
  timeout check 2s
  default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 2
${nodes.map((p, i) => `  server n${i + 1} 127.0.0.1:${p} check`).join('\n')}
`;
}

export class Haproxy {
  private proc: ChildProcess | null = null;
  private log = '';
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-haproxy-'));

  constructor(
    readonly port: number,
    private readonly nodes: number[],
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  output(): string {
    return this.log;
  }

  async start(): Promise<void> {
    const cfg = path.join(this.dir, 'haproxy.cfg');
    fs.writeFileSync(cfg, haproxyConfig(this.dir, this.port, this.nodes));
    // -db: in the foreground, one process to stop
    this.proc = spawn(HAPROXY, ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout!.on('data', (d) => (this.log += d));
    this.proc.stderr!.on('data', (d) => (this.log += d));
    for (let i = 0; !fs.existsSync(path.join(this.dir, 'haproxy.sock')); i++) {
      if (this.proc.exitCode !== null || i > 200) throw new Error(`haproxy did not start:\n${this.log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** What HAProxy's health checks say of each node: `UP`, `DOWN`, or a transition (`UP 1/2`...), by name (n1...). */
  async status(): Promise<Record<string, string>> {
    const csv = await this.command('show stat\n');
    const out: Record<string, string> = {};
    for (const line of csv.split('\n')) {
      const f = line.split(',');
      if (f[0] === 'switchyard_nodes' && /^n\d+$/.test(f[1])) out[f[1]] = f[17];
    }
    return out;
  }

  private command(cmd: string): Promise<string> {
    return new Promise((resolve, reject) => {
      let out = '';
      const s = net.connect(path.join(this.dir, 'haproxy.sock'), () => s.write(cmd));
      s.on('data', (d) => (out += d));
      s.on('end', () => resolve(out));
      s.on('error', reject);
    });
  }

  /** Waits until HAProxy's health checks see `node` (n1...) in `state` (UP or DOWN). */
  async until(node: string, state: 'UP' | 'DOWN', ms = 30_000): Promise<number> {
    const start = Date.now();
    while ((await this.status())[node] !== state) {
      if (Date.now() - start > ms) throw new Error(`haproxy did not see ${node} ${state} within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return Date.now() - start;
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
  }
}
