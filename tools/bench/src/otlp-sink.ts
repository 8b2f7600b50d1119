// A stand-in OpenTelemetry collector: accepts OTLP/HTTP exports and discards them, counting spans batches.
import * as http from 'node:http';

let batches = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/v1/traces') batches++;
    if (req.url === '/stats') return void res.end(JSON.stringify({ batches }));
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
