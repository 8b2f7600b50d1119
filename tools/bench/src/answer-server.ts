// The bench's own servers (the bare ceiling and the floor): node:http answering each route's JSON, nothing else.
import { createLogger, type Logger } from '@mileage/runtime/telemetry';
import { grpcFailureOf } from '@mileage/runtime/grpc';
import * as http from 'node:http';

/** An answer other than 200, with no body (the bench compares 200s only). */
export class Refused extends Error {
  constructor(readonly status: number) {
    super(String(status));
  }
}

type Route = (req: http.IncomingMessage) => Promise<string | Buffer> | undefined;

/**
 * Serves on 127.0.0.1:`port` what `route` answers (answerRequests), logged as `service`, /healthz, and closes on
 * SIGTERM, then runs `closed`.
 */
export function serveAnswers(
  service: string,
  port: number,
  route: Route,
  closed: () => Promise<unknown> | void = () => {},
): void {
  const server = http.createServer(answerRequests(route, createLogger({ service })));
  server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => server.close(() => void Promise.resolve(closed()).then(() => process.exit(0))));
}

/**
 * What `route` answers (JSON text or bytes; undefined: 404; Refused: its status) and /healthz. Any other failure is a
 * 500 and one error line (its URL, error, and a failed gRPC call's fields, as the gateway logs them), which the bench
 * shows among the servers' warnings when a request failed.
 */
export function answerRequests(route: Route, logger: Logger): http.RequestListener {
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
        if (err instanceof Refused) return void res.writeHead(err.status).end();
        const message = err instanceof Error ? err.message : String(err);
        logger.error({ url: req.url, err: message, ...grpcFailureOf(err) }, 'request failed');
        res.writeHead(500).end();
      },
    );
  };
}
