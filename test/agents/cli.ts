/** Running the agents' real CLIs (installed by `make agents` into test/agents/node_modules) offline against a gateway. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const BIN = path.join(__dirname, 'node_modules', '.bin');

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a CLI with no stdin (they wait for piped input otherwise), its output collected; killed after 100 s. */
export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(path.join(BIN, cmd), args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

export const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

/** Claude Code in print mode, offline, against the gateway at `url` with key `secret`, allowed to read files. */
export function claudeCode(url: string, secret: string, model: string, prompt: string, dir: string): Promise<Ran> {
  const env = {
    PATH: process.env.PATH,
    HOME: temp('switchyard-claude-home-'),
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_AUTH_TOKEN: secret,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
  };
  return run('claude', ['-p', prompt, '--allowedTools', 'Read'], env, dir);
}
