/** Gateway processes for tests that need several of them (shared database, shared Redis) or need to kill one. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

export interface GatewayProcess {
  url: string;
  proc: ChildProcess;
  output: () => string;
  /** SIGTERM (graceful) by default; SIGKILL to simulate a crash. Resolves when the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export function writeConfig(yaml: string): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-cfg-')), 'switchyard.yaml');
  fs.writeFileSync(file, yaml);
  return file;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface StartOptions {
  /** A given port (a process restarted where its load balancer expects it); default: a free one. */
  port?: number;
  /** Run the compiled dist/cli.js (`npm run build`) rather than the sources: starts faster, as deployed. */
  dist?: boolean;
}

export async function startProcess(
  configFile: string,
  env: NodeJS.ProcessEnv = {},
  args: string[] = [],
  opts: StartOptions = {},
): Promise<GatewayProcess> {
  const port = opts.port ?? (await freePort());
  const entry = opts.dist ? path.join(ROOT, 'dist', 'cli.js') : path.join(ROOT, 'bin', 'switchyard.js');
  const proc = spawn(process.execPath, [entry, 'serve', '--port', String(port), ...args], {
    cwd: ROOT,
    env: { ...process.env, SWITCHYARD_CONFIG: configFile, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  // Patient (a loaded 2-core machine compiles the sources for each process); a gateway that never comes up is
  // killed, so that no test leaves one behind.
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`the gateway exited at start-up:\n${out}`);
    try {
      await fetch(`${url}/v1/models`);
      break;
    } catch {
      if (i > 1200) {
        proc.kill('SIGKILL');
        throw new Error(`the gateway did not start:\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    proc,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
  };
}
