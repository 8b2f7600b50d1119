// An incoming `traceparent` may join a trace but cannot force sampling: with the gateway sampling no new requests,
// a request that claims to be sampled records nothing at all — not at the gateway, nor in the services behind it.
// Tracing runs per process, so this file has a process of its own (node --test isolates files).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import request from 'supertest';
import { tracedSuite } from './harness';

const suite = tracedSuite('gateway-edge-test', {
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: '0',
});
const { exporter } = suite;

describe('sampling at the edge', () => {
  test('a sampled traceparent from outside does not force recording', async () => {
    exporter.reset();
    for (const auth of [`Bearer ${suite.token}`, 'Bearer not-a-token', undefined]) {
      const req = request(suite.h.app())
        .get('/v1/users/me')
        .set('traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
      await (auth ? req.set('Authorization', auth) : req);
    }
    assert.deepEqual(exporter.getFinishedSpans(), []);
  });
});
