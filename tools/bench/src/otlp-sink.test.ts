// The stand-in collector decodes what the runtime's own exporters send: a child process starts tracing as the services
// do (http/protobuf as the chart installs it, and http/json), records a server span and a client span below it, and
// exits once its exporter has flushed them to the sink (so the sink has them: no waiting on time).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { SPAN_KIND, type SpanRecord } from './otlp-decode';

const TRACE_ID = 'a1'.repeat(16);
const CALLER_SPAN = 'b2'.repeat(8);
const CHILD = `
const t = require(${JSON.stringify(require.resolve('@mileage/runtime/telemetry'))});
const tracing = t.startTracing('sink-test');
const caller = t.extractContext({ traceparent: '00-${TRACE_ID}-${CALLER_SPAN}-01' });
const server = t.startSpan('GET', t.SpanKind.SERVER, caller);
const call = t.startSpan('users.v1.UsersService/GetUser', t.SpanKind.CLIENT, server.context, {
  'rpc.system': 'grpc', 'rpc.method': 'GetUser', 'rpc.grpc.status_code': -3, ratio: 0.25, retried: false,
});
t.endSpan(call.span);
t.endSpan(server.span);
tracing.shutdown().then(() => process.exit(0));
`;

let sink: ChildProcess;
let url: string;

before(async () => {
  sink = spawn(process.execPath, [path.join(__dirname, 'otlp-sink.js')], {
    env: { PATH: process.env.PATH, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = (await once(createInterface({ input: sink.stdout! }), 'line')) as [string];
  url = `http://127.0.0.1:${/listening on (\d+)/.exec(line)![1]}`;
});

after(() => {
  sink.kill('SIGTERM');
});

async function exportFromChild(protocol: string): Promise<void> {
  const child = spawn(process.execPath, ['-e', CHILD], {
    env: {
      PATH: process.env.PATH,
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const [code] = await once(child, 'exit');
  assert.equal(code, 0);
}

const get = async <T>(p: string) => (await (await fetch(`${url}${p}`)).json()) as T;

describe('the OTLP sink', () => {
  for (const protocol of ['http/protobuf', 'http/json']) {
    it(`records the spans of a ${protocol} export while asked to: ids, parents, kinds, times, attributes`, async () => {
      await fetch(`${url}/record?on=1`, { method: 'POST' });
      const started = Date.now();
      await exportFromChild(protocol);
      const spans = await get<SpanRecord[]>('/spans');
      assert.equal(spans.length, 2);
      const server = spans.find((s) => s.kind === SPAN_KIND.server)!;
      const call = spans.find((s) => s.kind === SPAN_KIND.client)!;
      assert.equal(server.traceId, TRACE_ID);
      assert.equal(server.parentSpanId, CALLER_SPAN);
      assert.equal(call.parentSpanId, server.spanId);
      assert.match(call.spanId, /^[0-9a-f]{16}$/);
      assert.deepEqual([server.name, call.name, server.service], ['GET', 'users.v1.UsersService/GetUser', 'sink-test']);
      assert.deepEqual(call.attributes, {
        'rpc.system': 'grpc',
        'rpc.method': 'GetUser',
        'rpc.grpc.status_code': -3,
        ratio: 0.25,
        retried: false,
      });
      for (const s of spans) {
        assert.ok(s.startMs >= started - 1000 && s.endMs <= Date.now() + 1000, `${s.name} within the test's time`);
        assert.ok(s.endMs >= s.startMs);
      }
      // Nested in time too, to the SDK's precision: it takes a span's start from Date.now() (whole ms) and its duration
      // from the monotonic clock, so a child may seem to end up to a millisecond after its parent.
      assert.ok(call.startMs >= server.startMs - 1 && call.endMs <= server.endMs + 1, JSON.stringify([server, call]));
      assert.equal((await get<{ problems: number }>('/stats')).problems, 0);
    });
  }

  it('keeps nothing when not recording', async () => {
    await fetch(`${url}/record?on=0`, { method: 'POST' });
    const { batches } = await get<{ batches: number }>('/stats');
    await exportFromChild('http/protobuf');
    assert.deepEqual(await get<SpanRecord[]>('/spans'), []);
    assert.equal((await get<{ batches: number }>('/stats')).batches, batches + 1);
  });
});
