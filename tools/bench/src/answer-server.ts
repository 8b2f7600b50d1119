// The bench's own servers (the bare ceiling and the floor): node:http answering each route's JSON, nothing else.
import * as http from 'node:http';

/** An answer other than 200, with no body (the bench compares 200s only). */
export class Refused extends Error {
  constructor(readonly status: number) {
    super(String(status));
  }
}

/**
 * Serves on 127.0.0.1:`port` what `route` answers (JSON text or bytes; undefined: 404), /healthz, and closes on
 * SIGTERM, then runs `closed`.
 */
export function serveAnswers(
  port: number,
  route: (req: http.IncomingMessage) => Promise<string | Buffer> | undefined,
  closed: () => Promise<unknown> | void = () => {},
): void {
  const server = http.createServer((req, res) => {
    if (req.url === '/healthz') return void res.end('ok');
    const answer = route(req);
    if (!answer) return void res.writeHead(404).end();
    answer.then(
      (body) =>
        res
          .writeHead(200, {
            'Content-Type': 'application/json; charset=utf-8',
            'Content-Length': Buffer.byteLength(body),
          })
          .end(body),
      (err: unknown) => res.writeHead(err instanceof Refused ? err.status : 500).end(),
    );
  });
  server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => server.close(() => void Promise.resolve(closed()).then(() => process.exit(0))));
}
