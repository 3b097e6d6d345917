/**
 * The database "goes away" without stopping a server other users share: the nodes reach it through a TCP proxy of
 * the test's own (tcpProxyProcess.mjs, a child process), which `cut()` resets and refuses (as when the database's host
 * goes down) and `restore()` lets through again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export class TcpProxy {
  private proc!: ChildProcess;
  private lines: string[] = [];
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<this> {
    this.proc = spawn(
      process.execPath,
      [path.join(__dirname, 'tcpProxyProcess.mjs'), this.host, String(this.targetPort)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let buf = '';
    this.proc.stdout!.on('data', (d) => {
      buf += d;
      const parts = buf.split('\n');
      buf = parts.pop()!;
      this.lines.push(...parts);
    });
    this.port = Number(await this.next());
    return this;
  }

  private async next(): Promise<string> {
    for (let i = 0; !this.lines.length; i++) {
      if (this.proc.exitCode !== null || i > 600) throw new Error('the TCP proxy did not answer');
      await new Promise((r) => setTimeout(r, 25));
    }
    return this.lines.shift()!;
  }

  async cut(): Promise<void> {
    this.proc.kill('SIGUSR1');
    if ((await this.next()) !== 'cut') throw new Error('the TCP proxy did not cut');
  }

  async restore(): Promise<void> {
    this.proc.kill('SIGUSR2');
    if ((await this.next()) !== 'restored') throw new Error('the TCP proxy did not restore');
  }

  async close(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise((r) => this.proc.once('exit', r));
    this.proc.kill('SIGKILL');
    await exited;
  }
}
