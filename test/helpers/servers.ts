/**
 * A MariaDB and a Redis of a test's own, on their own ports and data directories, that the test can stop and
 * start again (outages) — the shared servers on 3306 and 6379 stay up. MariaDB: Debian's mariadb-install-db and
 * /usr/sbin/mariadbd; Redis: redis-server. Both are what `make services` installs and starts.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './process';

export interface OwnServer {
  url: string;
  port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that accepts connections and never answers (a hung host, a network partition). */
  freeze(): void;
  thaw(): void;
  /** Stops it for good and deletes its data (a MariaDB's data directory is over 100 MB). */
  remove(): Promise<void>;
}

function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null
    ? Promise.resolve()
    : new Promise((r) => p.once('exit', () => r()));
}

async function until(what: string, ok: () => boolean | Promise<boolean>, log: () => string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not come up:\n${log()}`);
}

/** A MariaDB with database `switchyard` (root, no password) on a free port. */
export async function ownMariaDB(): Promise<OwnServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-mariadb-'));
  const data = path.join(dir, 'data');
  execFileSync(
    'mariadb-install-db',
    ['--no-defaults', `--datadir=${data}`, '--user=root', '--auth-root-authentication-method=normal', '--skip-test-db'],
    { stdio: 'ignore' },
  );
  const port = await freePort();
  const logFile = path.join(dir, 'log');
  let proc: ChildProcess | null = null;
  const ping = () => {
    try {
      execFileSync(
        'mariadb',
        ['-uroot', '-h127.0.0.1', `-P${port}`, '-e', 'CREATE DATABASE IF NOT EXISTS switchyard'],
        { stdio: 'ignore' },
      );
      return true;
    } catch {
      return false;
    }
  };
  const server: OwnServer = {
    url: `mysql://root@127.0.0.1:${port}/switchyard`,
    port,
    async start() {
      const args = [
        '--no-defaults',
        `--datadir=${data}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--socket=${path.join(dir, 'sock')}`,
        `--pid-file=${path.join(dir, 'pid')}`,
        '--user=root',
        '--innodb-buffer-pool-size=32M',
        `--log-error=${logFile}`,
      ];
      proc = spawn('/usr/sbin/mariadbd', args, { stdio: 'ignore' });
      await until('mariadbd', ping, () =>
        fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(-2000) : '',
      );
    },
    async stop() {
      if (!proc) return;
      proc.kill('SIGCONT');
      proc.kill('SIGTERM');
      await exited(proc);
      proc = null;
    },
    freeze: () => proc?.kill('SIGSTOP'),
    thaw: () => proc?.kill('SIGCONT'),
    async remove() {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

/** A Redis (nothing kept on disk) on a free port. */
export async function ownRedis(): Promise<OwnServer> {
  const port = await freePort();
  let proc: ChildProcess | null = null;
  let out = '';
  const server: OwnServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      proc = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      proc.stdout!.on('data', (d) => (out += d));
      await until(
        'redis-server',
        () => out.includes('Ready to accept connections'),
        () => out,
      );
    },
    async stop() {
      if (!proc) return;
      proc.kill('SIGKILL'); // an outage, not a shutdown
      await exited(proc);
      proc = null;
      out = '';
    },
    freeze: () => proc?.kill('SIGSTOP'),
    thaw: () => proc?.kill('SIGCONT'),
    remove: () => server.stop(),
  };
  await server.start();
  return server;
}
