// A TCP proxy between the gateway nodes and their database, in a process of its own (a busy test process must not
// slow the nodes' database connections down): `node tcpProxyProcess.mjs HOST PORT` prints the port it listens on, then
// SIGUSR1 cuts (every connection through it is reset, and every new one), SIGUSR2 restores; it answers each with a
// line, `cut` or `restored`. It keeps listening while cut, so that nobody else can take its port in between.
import net from 'node:net';

const [host, port] = process.argv.slice(2);
const open = new Set();
let cutOff = false;

const server = net.createServer((client) => {
  if (cutOff) return void client.resetAndDestroy();
  const upstream = net.connect(Number(port), host);
  for (const s of [client, upstream]) {
    open.add(s);
    s.setNoDelay(true);
    s.on('close', () => open.delete(s));
    // one side gone: the other goes too, reset, as a dropped connection looks
    s.on('error', () => (s === client ? upstream : client).resetAndDestroy());
  }
  client.pipe(upstream).pipe(client);
});

process.on('SIGUSR1', () => {
  cutOff = true;
  for (const s of open) s.resetAndDestroy();
  process.stdout.write('cut\n');
});
process.on('SIGUSR2', () => {
  cutOff = false;
  process.stdout.write('restored\n');
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
