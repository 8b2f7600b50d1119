// An incoming `traceparent` may join a trace but cannot force sampling: with the gateway sampling no new requests,
// a request that claims to be sampled records nothing at all — not at the gateway, nor in the services behind it.
// Tracing runs per process, so this file has a process of its own (node --test isolates files).
import { startTracing } from '@mileage/runtime';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { startHarness, type Harness } from './harness';

const exporter = new InMemorySpanExporter();
const tracing = startTracing(
  'gateway-edge-test',
  { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' },
  { spanExporter: exporter },
);

let h: Harness;
let token: string;
before(async () => {
  h = await startHarness();
  token = await h.token('alice@example.com', 'users_read');
});
after(async () => {
  await h.close();
  await tracing.shutdown();
});

describe('sampling at the edge', () => {
  test('a sampled traceparent from outside does not force recording', async () => {
    exporter.reset();
    for (const auth of [`Bearer ${token}`, 'Bearer not-a-token', undefined]) {
      const req = request(h.app())
        .get('/v1/users/me')
        .set('traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
      await (auth ? req.set('Authorization', auth) : req);
    }
    assert.deepEqual(exporter.getFinishedSpans(), []);
  });
});
