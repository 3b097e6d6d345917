/**
 * A TCP proxy of the test's own between the gateway nodes and their database, so that the database can "go away"
 * without stopping a server other users share: `cut()` resets every connection through it and every new one (the
 * nodes see their database drop and refuse them, as when its host goes down), `restore()` lets them through again.
 * It keeps listening while cut, so that nobody else can take its port in between.
 */
import net from 'node:net';

export class TcpProxy {
  private server!: net.Server;
  private readonly open = new Set<net.Socket>();
  private cutOff = false;
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<this> {
    this.server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  private accept(client: net.Socket): void {
    if (this.cutOff) return void client.resetAndDestroy();
    const upstream = net.connect(this.targetPort, this.host);
    for (const s of [client, upstream]) {
      this.open.add(s);
      s.setNoDelay(true);
      s.on('close', () => this.open.delete(s));
      // one side gone: the other goes too (a reset where it broke, as a dropped connection looks)
      s.on('error', () => (s === client ? upstream : client).destroy());
    }
    client.pipe(upstream).pipe(client);
  }

  cut(): void {
    this.cutOff = true;
    for (const s of this.open) s.resetAndDestroy();
  }

  restore(): void {
    this.cutOff = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
