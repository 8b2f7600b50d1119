import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { circuitBreakerConfig, commonConfigSchema, ConfigError, env, loadConfig } from './config/config';
import { checkServiceConfig, serviceConfigSchema } from './service/service';
import { LONGEST_CALL_DEADLINE_MS } from './grpc/grpc-client';
import { AppError, decodeServiceError, errors, toAppError, toStatusObject } from './grpc/errors';
import { Metrics, sharedWhileReading } from './telemetry/metrics';
import { tracingRequested } from './telemetry/tracing';

describe('configuration', () => {
  const schema = commonConfigSchema.extend({
    PORT: env.port(8080),
    DATABASE_URL: z.string().regex(/^postgres:\/\//, 'expected a postgres:// URL'),
  });

  test('applies defaults and coerces numbers', () => {
    const config = loadConfig(schema, { DATABASE_URL: 'postgres://x@h/db' });
    assert.equal(config.PORT, 8080);
    assert.equal(config.LOG_LEVEL, 'info');
  });

  test('the circuit breaker and reflection settings: defaults, off switches, bounds', () => {
    const defaults = loadConfig(schema, { DATABASE_URL: 'postgres://x@h/db' });
    assert.deepEqual(circuitBreakerConfig(defaults), { failureThreshold: 5, openMs: 3_000 });
    const off = loadConfig(schema, { DATABASE_URL: 'postgres://x@h/db', GRPC_CIRCUIT_FAILURE_THRESHOLD: '0' });
    assert.equal(off.GRPC_CIRCUIT_FAILURE_THRESHOLD, 0);
    assert.throws(() => loadConfig(schema, { DATABASE_URL: 'postgres://x@h/db', GRPC_CIRCUIT_OPEN_MS: '10' }));
    const service = serviceConfigSchema({ grpcPort: 50051, metricsPort: 9461 });
    assert.equal(loadConfig(service, { DATABASE_URL: 'postgres://x@h/db' }).GRPC_REFLECTION, false);
    assert.equal(
      loadConfig(service, { DATABASE_URL: 'postgres://x@h/db', GRPC_REFLECTION: 'true' }).GRPC_REFLECTION,
      true,
    );
  });

  test("a service's connection-age grace covers the longest deadline a call may have, or it does not start", () => {
    const service = serviceConfigSchema({ grpcPort: 50051, metricsPort: 9461 }).superRefine(checkServiceConfig);
    const url = { DATABASE_URL: 'postgres://x@h/db', GRPC_PLAINTEXT: 'true' };
    assert.equal(loadConfig(service, url).GRPC_MAX_CONNECTION_AGE_GRACE_MS, LONGEST_CALL_DEADLINE_MS);
    assert.throws(
      () => loadConfig(service, { ...url, GRPC_MAX_CONNECTION_AGE_GRACE_MS: String(LONGEST_CALL_DEADLINE_MS - 1) }),
      /GRPC_MAX_CONNECTION_AGE_GRACE_MS: must be at least 1800000/,
    );
  });

  test('lists every problem and hides secret values', () => {
    assert.throws(
      () => loadConfig(schema, { PORT: '70000', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://secret@h' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.problems.length, 3);
        assert.match(err.message, /PORT: .*\("70000"\)/);
        assert.match(err.message, /DATABASE_URL: expected a postgres:\/\/ URL \(set \(hidden\)\)/);
        assert.doesNotMatch(err.message, /secret@/);
        return true;
      },
    );
  });

  test("a client's target is host:port or grpc-js's static list of replicas", () => {
    const targets = z.object({ TARGET: env.target('127.0.0.1:50051') });
    for (const ok of ['127.0.0.1:50051', 'users.mileage.svc:50051', 'ipv4:127.0.0.1:50051,127.0.0.2:50051'])
      assert.equal(loadConfig(targets, { TARGET: ok }).TARGET, ok);
    for (const bad of ['users', 'ipv4:', 'ipv4:127.0.0.1', 'ipv4:127.0.0.1:1,', 'a:1,b:2', 'http://x:1'])
      assert.throws(() => loadConfig(targets, { TARGET: bad }), ConfigError, bad);
  });

  test('a list: comma-separated, blanks ignored, every item valid, at least `min` of them', () => {
    const lists = z.object({ LIST: env.list('a,b', (item) => /^[a-c]$/.test(item), 'letters a to c', 1) });
    assert.deepEqual(loadConfig(lists, {}).LIST, ['a', 'b']);
    assert.deepEqual(loadConfig(lists, { LIST: ' c , ,a ' }).LIST, ['c', 'a']);
    assert.throws(() => loadConfig(lists, { LIST: 'a,d' }), /LIST: letters a to c \("a,d"\)/);
    assert.throws(() => loadConfig(lists, { LIST: ' , ' }), /LIST: letters a to c/);
    const maybeEmpty = z.object({ LIST: env.list('', () => false, 'none') });
    assert.deepEqual(loadConfig(maybeEmpty, { LIST: ',' }).LIST, []);
  });
});

describe('errors across gRPC', () => {
  test('code, message, reason and field violations survive the round trip', () => {
    const original = errors.invalidArgument('invalid user', [{ field: 'user_name', description: 'required' }]);
    const st = toStatusObject(original);
    const decoded = decodeServiceError({ code: st.code!, details: st.details!, metadata: st.metadata! } as never);
    assert.equal(decoded.code, status.INVALID_ARGUMENT);
    assert.equal(decoded.message, 'invalid user');
    assert.equal(decoded.reason, 'INVALID_ARGUMENT');
    assert.deepEqual(decoded.fieldViolations, [{ field: 'user_name', description: 'required' }]);
  });

  test('a RetryInfo survives the round trip in milliseconds', () => {
    const st = toStatusObject(errors.unavailable('circuit open', 'CIRCUIT_OPEN'));
    assert.equal(decodeServiceError(st as never).retryAfterMs, undefined);
    const open = new AppError(status.UNAVAILABLE, 'circuit open', { reason: 'CIRCUIT_OPEN', retryAfterMs: 2_345 });
    const decoded = decodeServiceError(toStatusObject(open) as never);
    assert.equal(decoded.reason, 'CIRCUIT_OPEN');
    assert.equal(decoded.retryAfterMs, 2_345);
  });

  test('unexpected errors become INTERNAL without their message; database outages become UNAVAILABLE', () => {
    const internal = toAppError(new Error('relation "users" does not exist at character 15'));
    assert.equal(internal.unexpected, true);
    assert.equal(internal.appError.code, status.INTERNAL);
    assert.equal(internal.appError.message, 'internal error');
    assert.equal(toAppError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })).appError.code, status.UNAVAILABLE);
    assert.equal(toAppError(Object.assign(new Error('x'), { code: '57014' })).appError.code, status.DEADLINE_EXCEEDED);
    const kept = new AppError(status.NOT_FOUND, 'gone');
    assert.equal(toAppError(kept).appError, kept);
  });
});

/** The value of the first sample of `name` whose labels include `labels` (label order does not matter). */
function sample(body: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of body.split('\n')) {
    const m = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const found = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe('metrics', () => {
  test('exposes RED metrics, pool gauges and process metrics in Prometheus format', async () => {
    const metrics = new Metrics('unit');
    metrics.httpRequestDuration.observe({ method: 'GET', route: 'users.me', status_code: 200 }, 0.004);
    metrics.grpcServerHandled.inc({
      grpc_service: 'mileage.users.v1.UsersService',
      grpc_method: 'GetUser',
      grpc_code: 'OK',
    });
    metrics.registerPool('users', () => ({ used: 2, idle: 3, pending: 1 }));
    const server = await metrics.listen(0);
    try {
      const { port } = server.address() as { port: number };
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      const body = await res.text();
      assert.equal(res.status, 200);
      assert.equal(
        sample(body, 'http_server_request_duration_seconds_bucket', {
          le: '0.005',
          route: 'users.me',
          status_code: '200',
          service: 'unit',
        }),
        1,
      );
      assert.equal(sample(body, 'grpc_server_handled_total', { grpc_method: 'GetUser', grpc_code: 'OK' }), 1);
      assert.equal(sample(body, 'db_pool_connections', { pool: 'users', state: 'used' }), 2);
      assert.equal(sample(body, 'db_pool_connections', { pool: 'users', state: 'pending' }), 1);
      assert.match(body, /process_resident_memory_bytes/);
      assert.match(body, /nodejs_eventloop_lag_p99_seconds/);
      assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
    } finally {
      server.close();
    }
  });

  test('a gauge whose read at scrape time fails or hangs keeps its last value; the scrape keeps the rest', async () => {
    const metrics = new Metrics('unit', 50);
    let read: () => Promise<number> = async () => 7;
    metrics.gauge({
      name: 'unit_rows_waiting',
      help: 'rows',
      async collect() {
        this.set(await read());
      },
    });
    metrics.registerPool('users', () => ({ used: 2, idle: 3, pending: 1 }));
    const server = await metrics.listen(0);
    try {
      const { port } = server.address() as { port: number };
      const scrape = async () => {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`);
        assert.equal(res.status, 200);
        return res.text();
      };
      assert.match(await scrape(), /^unit_rows_waiting\{service="unit"\} 7$/m);
      read = () => Promise.reject(new Error('connect ECONNREFUSED'));
      let body = await scrape();
      assert.match(body, /^unit_rows_waiting\{service="unit"\} 7$/m);
      assert.equal(sample(body, 'db_pool_connections', { pool: 'users', state: 'used' }), 2);
      read = () => new Promise<number>(() => {});
      body = await scrape();
      assert.match(body, /^unit_rows_waiting\{service="unit"\} 7$/m);
      // A failure is counted as its scrape ends: the next one shows it (the counter renders beside the gauges).
      assert.equal(sample(body, 'metrics_collect_failures_total', { metric: 'unit_rows_waiting' }), 1);
      read = async () => 3;
      body = await scrape();
      assert.match(body, /^unit_rows_waiting\{service="unit"\} 3$/m);
      assert.equal(sample(body, 'metrics_collect_failures_total', { metric: 'unit_rows_waiting' }), 2);
    } finally {
      server.close();
    }
  });

  test("gauges fed by one read show that scrape's answer, and the read runs once a scrape", async () => {
    const metrics = new Metrics('unit');
    let reads = 0;
    const queue = sharedWhileReading(async () => ({ depth: ++reads * 10, oldestSeconds: reads }));
    metrics.gauge({
      name: 'unit_queue_depth',
      help: 'depth',
      async collect() {
        this.set((await queue()).depth);
      },
    });
    metrics.gauge({
      name: 'unit_queue_oldest_seconds',
      help: 'oldest',
      async collect() {
        this.set((await queue()).oldestSeconds);
      },
    });
    for (const scrape of [1, 2]) {
      const body = await metrics.registry.metrics();
      assert.equal(reads, scrape);
      assert.match(body, new RegExp(`^unit_queue_depth\\{service="unit"\\} ${scrape * 10}$`, 'm'));
      assert.match(body, new RegExp(`^unit_queue_oldest_seconds\\{service="unit"\\} ${scrape}$`, 'm'));
    }
  });
});

describe('tracing switch', () => {
  test('is off unless an exporter or endpoint is configured', () => {
    assert.equal(tracingRequested({}), false);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), true);
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' }), false);
    assert.equal(tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' }), false);
  });
});
