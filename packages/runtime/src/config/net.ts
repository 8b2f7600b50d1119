import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

// Ports this process handed out: the kernel gives the same free port to two bind(0) calls in a row now and then
// (3 times in 300 launches of 14 ports here), and a stack given one port twice fails to start.
const handedOut = new Set<number>();

/**
 * The ports to choose from: those below the kernel's ephemeral range, so that no outgoing connection (to Postgres,
 * to a service) is given the port between our check and the server's bind. Undefined: let the kernel choose.
 */
function rangeBelowEphemeral(): { low: number; high: number } | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return low > 12_000 ? { low: 10_000, high: low - 1 } : undefined;
  } catch {
    return undefined;
  }
}
const RANGE = rangeBelowEphemeral();

function bindable(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (err: NodeJS.ErrnoException) =>
      err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(undefined) : reject(err),
    );
    srv.listen(port, '127.0.0.1', () => {
      const bound = (srv.address() as { port: number }).port;
      srv.close(() => resolve(bound));
    });
  });
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago and that this process has not handed out before (for tests and
 * local tooling).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const wanted = RANGE ? RANGE.low + Math.floor(Math.random() * (RANGE.high - RANGE.low + 1)) : 0;
    if (handedOut.has(wanted)) continue;
    if (wanted) handedOut.add(wanted);
    const port = await bindable(wanted);
    if (port === undefined || (!wanted && handedOut.has(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error('no free TCP port on 127.0.0.1 after 100 attempts');
}
