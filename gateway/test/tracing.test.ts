// Tracing runs per process, so this file has a process of its own (node --test isolates files).
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import request from 'supertest';
import { tracedSuite } from './harness';

// Every request sampled at the edge, so the shape of a trace is deterministic (tracing-edge.test.ts covers the ratio).
const suite = tracedSuite('gateway-test', { OTEL_TRACES_SAMPLER: 'parentbased_always_on' });
const { exporter } = suite;

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

describe('trace context gateway → gRPC → SQL', () => {
  test('a sampled request yields one trace: HTTP server → gRPC client → gRPC server → SQL', async () => {
    exporter.reset();
    await request(suite.h.app())
      .get('/v1/users/me')
      .set('Authorization', `Bearer ${suite.token}`)
      .set('traceparent', `00-${TRACE_ID}-${PARENT_ID}-01`)
      .expect(200);
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === TRACE_ID);
    const byName = (pattern: RegExp) => {
      const found = spans.filter((s) => pattern.test(s.name));
      assert.equal(found.length, 1, `one span matching ${pattern} among ${spans.map((s) => s.name).join(', ')}`);
      return found[0]!;
    };
    const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
    const http = byName(/^GET \/v1\/users\/me$/);
    const client = spans.find((s) => s.name === 'mileage.users.v1.UsersService/BatchGetUsers' && s.kind === 2)!;
    const server = spans.find((s) => s.name === 'mileage.users.v1.UsersService/BatchGetUsers' && s.kind === 1)!;
    const sql = byName(/^SELECT users$/);
    assert.equal(parentOf(http), PARENT_ID);
    assert.equal(parentOf(client), http.spanContext().spanId);
    assert.equal(parentOf(server), client.spanContext().spanId);
    assert.equal(parentOf(sql), server.spanContext().spanId);
    assert.equal(http.attributes['http.response.status_code'], 200);
    assert.equal(http.attributes['http.route'], '/v1/users/me');
    assert.equal(sql.attributes['db.system.name'], 'postgresql');
  });

  test("the caller's sampled flag is not obeyed: an unsampled incoming trace is joined when the gateway samples", async () => {
    exporter.reset();
    const traceId = TRACE_ID.replace('4', '5');
    await request(suite.h.app())
      .get('/v1/users/me')
      .set('Authorization', `Bearer ${suite.token}`)
      .set('traceparent', `00-${traceId}-${PARENT_ID}-00`)
      .expect(200);
    const spans = exporter.getFinishedSpans();
    assert.ok(spans.length >= 4, 'HTTP, gRPC client, gRPC server and SQL spans');
    assert.ok(spans.every((s) => s.spanContext().traceId === traceId));
  });
});
