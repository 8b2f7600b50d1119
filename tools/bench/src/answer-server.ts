// The bench's own servers (the bare ceiling and the floor): node:http answering each route's JSON, nothing else.
import * as http from 'node:http';

/** An answer other than 200, with no body (the bench compares 200s only). */
export class Refused extends Error {
  constructor(readonly status: number) {
    super(String(status));
  }
}

/**
 * Serves on 127.0.0.1:`port` what `route` answers (answerRequests), /healthz, and closes on SIGTERM, then runs
 * `closed`.
 */
export function serveAnswers(
  port: number,
  route: Route,
  closed: () => Promise<unknown> | void = () => {},
  failed: Failed = logFailure,
): void {
  const server = http.createServer(answerRequests(route, failed));
  server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => server.close(() => void Promise.resolve(closed()).then(() => process.exit(0))));
}

type Route = (req: http.IncomingMessage) => Promise<string | Buffer> | undefined;
type Failed = (err: unknown, req: http.IncomingMessage) => void;

/**
 * What `route` answers (JSON text or bytes; undefined: 404; Refused: its status) and /healthz. Any other failure is a
 * 500, reported to `failed` (by default one error line on stdout), so that the bench can say why a request failed.
 */
export function answerRequests(route: Route, failed: Failed = logFailure): http.RequestListener {
  return (req, res) => {
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
      (err: unknown) => {
        if (!(err instanceof Refused)) failed(err, req);
        res.writeHead(err instanceof Refused ? err.status : 500).end();
      },
    );
  };
}

/** The line of a failed request, in the platform's log format (a level and a message), for the bench's warnings. */
export function logFailure(err: unknown, req: http.IncomingMessage): void {
  const message = err instanceof Error ? err.message : String(err);
  const line = { level: 'error', time: new Date().toISOString(), url: req.url, err: message, msg: 'request failed' };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
