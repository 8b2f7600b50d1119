// A stand-in OpenTelemetry collector: accepts OTLP/HTTP exports and counts the batches; while recording (POST /record,
// for the one-connection traced pass) it also decodes the spans and keeps them for GET /spans. Decoding only then,
// so that the sink costs the measured runs no more than a discarding collector would.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { decodeTraceJson, decodeTraceRequest, type SpanRecord } from './otlp-decode';

let batches = 0;
let lastBatchAt = 0;
let recording = false;
let spans: SpanRecord[] = [];
let problems = 0;

function record(req: http.IncomingMessage, body: Buffer): void {
  try {
    const raw = req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
    const json = String(req.headers['content-type']).startsWith('application/json');
    spans.push(...(json ? decodeTraceJson(JSON.parse(raw.toString('utf8'))) : decodeTraceRequest(raw)));
  } catch {
    // Counted and reported by /stats: the bench fails the traced pass rather than guess.
    problems++;
  }
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => recording && chunks.push(c));
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://sink');
    if (req.method === 'POST' && url.pathname === '/v1/traces') {
      batches++;
      lastBatchAt = Date.now();
      if (recording) record(req, Buffer.concat(chunks));
      // An empty ExportTraceServiceResponse in the request's own encoding.
      const json = String(req.headers['content-type']).startsWith('application/json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      return void res.end(json ? '{}' : '');
    }
    if (url.pathname === '/stats') {
      const idleMs = lastBatchAt ? Date.now() - lastBatchAt : null;
      return void res.end(JSON.stringify({ batches, recording, spans: spans.length, problems, idleMs }));
    }
    // POST /record?on=1 starts recording afresh; ?on=0 stops and forgets.
    if (req.method === 'POST' && url.pathname === '/record') {
      recording = url.searchParams.get('on') === '1';
      spans = [];
      problems = 0;
      return void res.end('{}');
    }
    if (url.pathname === '/spans') return void res.end(JSON.stringify(spans));
    res.writeHead(404).end();
  });
});
// PORT=0: any free port, said on stdout (for the tests).
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`otlp sink listening on ${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
