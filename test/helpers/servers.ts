/**
 * A MariaDB, a PostgreSQL and a Redis of a test's own, on their own ports and data directories, that the test can stop
 * and start again (outages) — the shared servers on 3306, 5432 and 6379 stay up. MariaDB: Debian's mariadb-install-db
 * and /usr/sbin/mariadbd; PostgreSQL: Debian's initdb and postgres (/usr/lib/postgresql/<version>/bin); Redis:
 * redis-server. All are what `make services` expects.
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
  /**
   * SIGSTOP / SIGCONT: a server that accepts connections and never answers (a hung host, a network partition).
   * freeze() resolves once every thread of the server's processes is stopped: a thread inside a system call that
   * cannot be interrupted (an fsync on a loaded disk) stops only when the call returns, and may answer meanwhile.
   */
  freeze(): Promise<void>;
  thaw(): void;
  /** Stops it for good and deletes its data (a MariaDB's data directory is over 100 MB). */
  remove(): Promise<void>;
}

/** Whether every thread of process `pid` is stopped (state T in /proc), or the process is gone. */
function isStopped(pid: number): boolean {
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return true; // ended
  }
  return tids.every((tid) => {
    try {
      // the state follows the command's name, which is in parentheses and may hold spaces
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return /^[Tt]/.test(stat.slice(stat.lastIndexOf(')') + 2));
    } catch {
      return true; // the thread ended meanwhile
    }
  });
}

/** Sends SIGSTOP to each process and waits (up to 20 s) until all their threads are stopped. */
async function stopAll(pids: number[]): Promise<void> {
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  for (let i = 0; i < 200; i++) {
    if (pids.every(isStopped)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`SIGSTOP sent, but threads of ${pids.join(', ')} still run after 20 s`);
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
    freeze: async () => {
      if (proc?.pid) await stopAll([proc.pid]);
    },
    thaw: () => proc?.kill('SIGCONT'),
    async remove() {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

/** Debian's PostgreSQL programs (initdb, postgres), newest version installed. */
function postgresBin(): string {
  const base = '/usr/lib/postgresql';
  const versions = fs.existsSync(base) ? fs.readdirSync(base).sort((a, b) => Number(b) - Number(a)) : [];
  if (!versions.length)
    throw new Error(`PostgreSQL is not installed (${base} is missing): install Debian's postgresql`);
  return path.join(base, versions[0], 'bin');
}

/**
 * A PostgreSQL with database `switchyard` (role postgres, trust authentication) on a free port. PostgreSQL refuses
 * to run as root, so as root it runs as the user postgres, which then owns its directory. Freezing it stops the
 * postmaster and every backend, as a hung host would.
 */
export async function ownPostgres(): Promise<OwnServer> {
  const bin = postgresBin();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-postgres-'));
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const ids = asRoot
    ? { uid: Number(execFileSync('id', ['-u', 'postgres'])), gid: Number(execFileSync('id', ['-g', 'postgres'])) }
    : {};
  if (asRoot) fs.chownSync(dir, ids.uid!, ids.gid!);
  execFileSync(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], {
    stdio: 'ignore',
    ...ids,
  });
  const port = await freePort();
  const logFile = path.join(dir, 'log');
  let proc: ChildProcess | null = null;
  const ping = () => {
    try {
      const psql = ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-Atc'];
      if (
        execFileSync('psql', [...psql, "SELECT 1 FROM pg_database WHERE datname = 'switchyard'"])
          .toString()
          .trim()
      )
        return true;
      execFileSync('psql', [...psql, 'CREATE DATABASE switchyard'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  // Every backend makes itself a process group leader (so the postmaster can signal its children): the postmaster
  // and each of its children are signalled one by one.
  const pids = () => {
    if (!proc?.pid) return [];
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(proc.pid)])
      .toString()
      .trim()
      .split(/\s+/);
    return [proc.pid, ...children.filter(Boolean).map(Number)];
  };
  const all = (signal: NodeJS.Signals) => {
    for (const pid of pids()) {
      try {
        process.kill(pid, signal);
      } catch {
        // a backend that ended meanwhile
      }
    }
  };
  const server: OwnServer = {
    url: `postgres://postgres@127.0.0.1:${port}/switchyard`,
    port,
    async start() {
      const args = ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'];
      const args2 = [...args, '-c', 'fsync=off', '-c', 'shared_buffers=16MB', '-c', 'max_connections=50'];
      const log = fs.openSync(logFile, 'a');
      if (asRoot) fs.fchownSync(log, ids.uid!, ids.gid!);
      proc = spawn(path.join(bin, 'postgres'), args2, { stdio: ['ignore', log, log], ...ids });
      fs.closeSync(log);
      await until('postgres', ping, () =>
        fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(-2000) : '',
      );
    },
    async stop() {
      if (!proc) return;
      all('SIGCONT');
      proc.kill('SIGINT'); // fast shutdown: the backends are ended, their clients see the connection close
      await exited(proc);
      proc = null;
    },
    freeze: () => stopAll(pids()),
    thaw: () => all('SIGCONT'),
    async remove() {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

/** The own database server of the kind DATABASE_URL names: PostgreSQL for postgres://, MariaDB otherwise. */
export const ownDatabase = (): Promise<OwnServer> =>
  /^postgres(ql)?:/.test(process.env.DATABASE_URL ?? '') ? ownPostgres() : ownMariaDB();

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
    freeze: async () => {
      if (proc?.pid) await stopAll([proc.pid]);
    },
    thaw: () => proc?.kill('SIGCONT'),
    remove: () => server.stop(),
  };
  await server.start();
  return server;
}
