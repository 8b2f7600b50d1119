// Test helpers of the Webhooks service: receivers on loopback.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on 127.0.0.1 that records every request; `respond` picks the answer. */
export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  respond: (r: Received) => { status: number; headers?: Record<string, string>; body?: string };
  /** Stops listening and drops connections (the receiver is down). */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hook'): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    respond: () => ({ status: 204 }),
    down: async () => {
      server.closeAllConnections();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    up: () => listen(receiver.port),
    close: () => receiver.down(),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      receiver.received.push(r);
      const answer = receiver.respond(r);
      res.writeHead(answer.status, answer.headers).end(answer.body);
    });
  });
  server.keepAliveTimeout = 1_000;
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}${path}`;
  return receiver;
}
