// Each OTLP protocol the README lists reaches a collector on loopback in that protocol; any other value stops the
// process at start-up. Tracing is process-global, so each case runs in a child process of its own.
import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { otlpProtocol } from './tracing';

const TRACING = path.join(__dirname, 'tracing.js');
// Starts tracing with the given environment, records one sampled span and flushes it on shutdown.
const CHILD = `
const t = require(${JSON.stringify(TRACING)});
const tracing = t.startTracing('otlp-protocol-test');
const { span } = t.startSpan('probe', t.SpanKind.INTERNAL, t.extractContext({ traceparent: '00-${'a'.repeat(32)}-${'b'.repeat(16)}-01' }));
t.endSpan(span);
tracing.shutdown().then(() => process.exit(0));
`;

async function runChild(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['-e', CHILD], {
    env: { PATH: process.env.PATH, OTEL_TRACES_SAMPLER: 'parentbased_always_on', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const [code] = await once(child, 'exit');
  return { code, stderr };
}

async function httpCollector(): Promise<{ url: string; received: Promise<IncomingMessage & { body: Buffer }> }> {
  let resolve!: (r: IncomingMessage & { body: Buffer }) => void;
  const received = new Promise<IncomingMessage & { body: Buffer }>((r) => (resolve = r));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end('{}');
      server.close();
      resolve(Object.assign(req, { body: Buffer.concat(chunks) }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

describe('OTLP export protocol', () => {
  it('defaults to http/protobuf and selects by the TRACES variable first', () => {
    assert.equal(otlpProtocol({}), 'http/protobuf');
    assert.equal(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), 'grpc');
    assert.equal(
      otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }),
      'http/json',
    );
    assert.throws(() => otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/xml' }), /OTEL_EXPORTER_OTLP_PROTOCOL/);
  });

  for (const [protocol, contentType] of [
    ['http/protobuf', 'application/x-protobuf'],
    ['http/json', 'application/json'],
  ] as const) {
    it(`${protocol} posts the span to /v1/traces as ${contentType}`, async () => {
      const collector = await httpCollector();
      const run = runChild({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol });
      const req = await collector.received;
      assert.equal(req.url, '/v1/traces');
      assert.equal(req.headers['content-type'], contentType);
      if (protocol === 'http/json') {
        const body = JSON.parse(req.body.toString('utf8'));
        assert.equal(body.resourceSpans[0].scopeSpans[0].spans[0].name, 'probe');
      } else {
        assert.ok(req.body.includes(Buffer.from('probe')), 'the protobuf body carries the span name');
      }
      assert.equal((await run).code, 0);
    });
  }

  it('grpc calls the collector TraceService', async () => {
    const server = new grpc.Server();
    let resolve!: (body: Buffer) => void;
    const received = new Promise<Buffer>((r) => (resolve = r));
    const exportMethod = {
      path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
      requestStream: false,
      responseStream: false,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (b: Buffer) => b,
      responseDeserialize: (b: Buffer) => b,
    };
    server.addService({ Export: exportMethod }, {
      // An empty message is a valid ExportTraceServiceResponse.
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        resolve(call.request);
        callback(null, Buffer.alloc(0));
      },
    } as grpc.UntypedServiceImplementation);
    const port = await new Promise<number>((ok, fail) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? fail(e) : ok(p))),
    );
    try {
      const run = runChild({
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      });
      assert.ok((await received).includes(Buffer.from('probe')), 'the exported request carries the span name');
      assert.equal((await run).code, 0);
    } finally {
      server.forceShutdown();
    }
  });

  it('refuses an unsupported protocol at start-up with exit 78 and the variable named', async () => {
    const { code, stderr } = await runChild({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/xml',
    });
    assert.equal(code, 78);
    assert.match(
      stderr,
      /OTEL_EXPORTER_OTLP_PROTOCOL: expected one of http\/protobuf, http\/json, grpc \("http\/xml"\)/,
    );
  });
});
