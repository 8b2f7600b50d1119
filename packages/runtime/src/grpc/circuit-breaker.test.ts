/**
 * The gRPC client's circuit breaker against a real gRPC server in this process whose handler hangs, answers or fails
 * on demand. Time is the breaker's injected clock (advanced by the test) and the calls' own short deadlines; every
 * other step waits on an explicit promise (the probe settled).
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { PROTO_FILES, usersV1 } from '@mileage/proto';
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { CircuitBreaker } from './circuit-breaker';
import { decodeServiceError, errors, type DecodedError } from './errors';
import { CIRCUIT_OPEN_REASON, createGrpcClient, grpcCallOf, type PromiseClient } from './grpc-client';
import { startGrpcServer, type GrpcServerHandle } from './grpc-server';
import { createLogger } from '../telemetry/logger';
import { Metrics } from '../telemetry/metrics';
import { freePort } from '../config/net';
import { usersServiceStub, stubUser } from './users-stub.fixture';

type Behaviour = 'ok' | 'hang' | 'notFound' | 'invalid' | 'denied' | 'databaseDown';

let server: GrpcServerHandle;
let address: string;
/** What the server's getUser does with the next calls. */
let behaviour: Behaviour = 'ok';
/** Calls that reached the server's handler, and their request ids. */
let reached = 0;
const seen = new Set<string>();
/** Deadline of a call while the handler hangs (it can only end at its deadline); others get 5 s (a loaded machine). */
const HANG_DEADLINE_MS = 150;
/** Released at the end: hanging handlers then return (their callers' deadlines have long passed). */
let releaseHung!: () => void;
const hung = new Promise<void>((resolve) => (releaseHung = resolve));
const handlers = usersServiceStub({
  getUser: async (req, ctx) => {
    reached += 1;
    seen.add(ctx.requestId);
    switch (behaviour) {
      case 'hang':
        await hung;
        break;
      case 'notFound':
        throw errors.notFound('no such user');
      case 'invalid':
        throw errors.invalidArgument('bad id', [{ field: 'id', description: 'invalid user id' }]);
      case 'denied':
        throw errors.permissionDenied('not yours');
      case 'databaseDown':
        throw errors.unavailable('the database is unavailable', 'DATABASE_UNAVAILABLE');
      case 'ok':
        break;
    }
    return {
      user: stubUser(req.id),
    };
  },
});

before(async () => {
  server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [{ definition: usersV1.UsersServiceService, handlers: handlers as never }],
    protoFiles: [PROTO_FILES.users],
    logger: createLogger({ service: 'circuit-test', level: 'silent' }),
    metrics: new Metrics('circuit-test-server'),
  });
  address = `127.0.0.1:${server.port}`;
});

after(async () => {
  releaseHung();
  await server.shutdown(1_000);
});

beforeEach(() => {
  behaviour = 'ok';
  reached = 0;
});

interface Rig {
  client: PromiseClient<usersV1.UsersServiceClient>;
  metrics: Metrics;
  logs: Record<string, unknown>[];
  clock: { now: number };
  /** A GetUser call with request id `id` (the server records the ids it sees). */
  call(id?: string): Promise<DecodedError | 'OK'>;
  state(): Promise<number | undefined>;
  transitions(): Promise<Record<string, number>>;
}

const SERVICE = 'mileage.users.v1.UsersService';

let calls = 0;

function rig(options: { failureThreshold: number; openMs: number; target?: string }): Rig {
  const metrics = new Metrics('circuit-test');
  const logs: Record<string, unknown>[] = [];
  const clock = { now: 1_700_000_000_000 };
  const target = options.target ?? address;
  const client = createGrpcClient(usersV1.UsersServiceClient, target, {
    defaultDeadlineMs: 5_000,
    metrics,
    logger: createLogger({
      service: 'circuit-test',
      destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
    }),
    circuitBreaker: { failureThreshold: options.failureThreshold, openMs: options.openMs, now: () => clock.now },
  });
  const labels = { target, grpc_service: SERVICE };
  return {
    client,
    metrics,
    logs,
    clock,
    call: (id = `call-${++calls}`) =>
      client
        .getUser(
          { id: 'AliceAdm01', includeDeleted: false },
          { requestId: id, ...(behaviour === 'hang' ? { deadlineMs: HANG_DEADLINE_MS } : {}) },
        )
        .then(
          () => 'OK' as const,
          (err: ServiceError) => decodeServiceError(err),
        ),
    async state() {
      const { values } = await metrics.grpcClientCircuitState.get();
      return values.find((v) => v.labels.target === labels.target && v.labels.grpc_service === SERVICE)?.value;
    },
    async transitions() {
      const { values } = await metrics.grpcClientCircuitTransitions.get();
      return Object.fromEntries(values.map((v) => [String(v.labels.to), v.value]));
    },
  };
}

const isCircuitOpen = (outcome: DecodedError | 'OK') =>
  outcome !== 'OK' && outcome.code === status.UNAVAILABLE && outcome.reason === CIRCUIT_OPEN_REASON;
const code = (outcome: DecodedError | 'OK') => (outcome === 'OK' ? 'OK' : status[outcome.code]);

describe('gRPC client circuit breaker', () => {
  test('opens after the threshold of hung calls, refuses at once while open, then probes with a health check (never a user call) and closes', async () => {
    const r = rig({ failureThreshold: 3, openMs: 4_000 });
    try {
      behaviour = 'hang';
      // Two calls time out together: below the threshold the circuit stays closed.
      assert.deepEqual((await Promise.all([r.call(), r.call()])).map(code), ['DEADLINE_EXCEEDED', 'DEADLINE_EXCEEDED']);
      assert.equal(r.client.circuit.state, 'closed');
      assert.equal(await r.state(), 0);
      // The third failure in a row opens it.
      assert.equal(code(await r.call()), 'DEADLINE_EXCEEDED');
      assert.equal(r.client.circuit.state, 'open');
      assert.equal(await r.state(), 2);

      // Open: refused at once with the circuit's UNAVAILABLE (not the deadline's DEADLINE_EXCEEDED), the server is not
      // reached, and the RetryInfo says how long the circuit stays open.
      const refused = await r.call('open-1');
      assert.ok(isCircuitOpen(refused), `circuit error, got ${JSON.stringify(refused)}`);
      assert.equal((refused as DecodedError).retryAfterMs, 4_000);
      const refusedError = await r.client.getUser({ id: 'AliceAdm01', includeDeleted: false }).catch((e: unknown) => e);
      assert.deepEqual(grpcCallOf(refusedError), { grpc_service: SERVICE, grpc_method: 'GetUser' }, 'names its call');
      r.clock.now += 1_500;
      assert.equal(((await r.call('open-2')) as DecodedError).retryAfterMs, 2_500);

      // Past the open time the next call starts the probe and is refused like every call while it runs: the probe is
      // the server's health check, which answers although GetUser still hangs; no user's call waits for it.
      r.clock.now += 2_500;
      const during = await r.call('half-open-1');
      assert.ok(isCircuitOpen(during));
      assert.equal((during as DecodedError).retryAfterMs, 1_000);
      assert.equal(r.client.circuit.state, 'half_open');
      await r.client.circuit.probed();
      assert.equal(r.client.circuit.state, 'closed');
      assert.equal(await r.state(), 0);

      behaviour = 'ok';
      assert.equal(await r.call('after'), 'OK');
      assert.ok(seen.has('after'));
      // Refused calls never left the client.
      for (const id of ['open-1', 'open-2', 'half-open-1']) assert.ok(!seen.has(id), id);

      assert.deepEqual(await r.transitions(), { open: 1, half_open: 1, closed: 1 });
      const { values: handled } = await r.metrics.grpcClientHandled.get();
      const refusedCount = handled.find(
        (v) => v.labels.grpc_method === 'GetUser' && v.labels.grpc_code === 'UNAVAILABLE',
      )?.value;
      assert.equal(
        refusedCount,
        4,
        'refused calls are counted as UNAVAILABLE client calls (open-1, open-2, half-open-1 and the one named)',
      );
      const changes = r.logs.filter((l) => l.msg === 'gRPC circuit state changed');
      assert.deepEqual(
        changes.map((l) => [l.level, l.circuit_from, l.circuit_to, l.target, l.grpc_service]),
        [
          ['warn', 'closed', 'open', address, SERVICE],
          ['info', 'open', 'half_open', address, SERVICE],
          ['info', 'half_open', 'closed', address, SERVICE],
        ],
      );
      assert.equal(changes[0]!.consecutive_failures, 3);
      assert.equal(changes[0]!.open_ms, 4_000);
    } finally {
      r.client.close();
    }
  });

  test('a probe that finds nobody opens the circuit again for the whole open time; one that answers closes it', async () => {
    const nobody = `127.0.0.1:${await freePort()}`;
    const r = rig({ failureThreshold: 1, openMs: 2_000, target: nobody });
    try {
      assert.equal(code(await r.call()), 'UNAVAILABLE');
      assert.equal(r.client.circuit.state, 'open');
      r.clock.now += 2_000;
      assert.ok(isCircuitOpen(await r.call()));
      await r.client.circuit.probed();
      assert.equal(r.client.circuit.state, 'open');
      assert.equal(((await r.call()) as DecodedError).retryAfterMs, 2_000);
      assert.deepEqual(await r.transitions(), { open: 2, half_open: 1 });
      assert.deepEqual(
        r.logs.filter((l) => l.msg === 'gRPC circuit state changed').map((l) => `${l.circuit_from}>${l.circuit_to}`),
        ['closed>open', 'open>half_open', 'half_open>open'],
      );
    } finally {
      r.client.close();
    }
  });

  test("business errors, a server's own UNAVAILABLE and failures broken by a success never open it", async () => {
    const r = rig({ failureThreshold: 2, openMs: 2_000 });
    try {
      for (const b of ['notFound', 'invalid', 'denied', 'databaseDown'] as const) {
        behaviour = b;
        for (let i = 0; i < 3; i++) assert.notEqual(code(await r.call()), 'OK');
      }
      // Every call reached the server; a read answered UNAVAILABLE is sent once more (the channel's retry policy).
      assert.equal(reached, 9 + 3 * 2);
      assert.equal(r.client.circuit.state, 'closed');
      // hang, ok, hang: never two failures in a row.
      for (const b of ['hang', 'ok', 'hang', 'ok'] as const) {
        behaviour = b;
        await r.call();
      }
      assert.equal(r.client.circuit.state, 'closed');
      assert.equal(await r.state(), 0);
      assert.deepEqual(await r.transitions(), {});
      assert.equal(r.logs.filter((l) => l.msg === 'gRPC circuit state changed').length, 0);
    } finally {
      r.client.close();
    }
  });

  test('a downstream that refuses connections (UNAVAILABLE) opens it; threshold 0 turns the breaker off', async () => {
    const nobody = `127.0.0.1:${await freePort()}`;
    const r = rig({ failureThreshold: 2, openMs: 2_000, target: nobody });
    const off = rig({ failureThreshold: 0, openMs: 2_000, target: nobody });
    try {
      assert.equal(code(await r.call()), 'UNAVAILABLE');
      assert.equal(code(await r.call()), 'UNAVAILABLE');
      assert.equal(r.client.circuit.state, 'open');
      assert.ok(isCircuitOpen(await r.call()));
      for (let i = 0; i < 4; i++) {
        const outcome = await off.call();
        assert.equal(code(outcome), 'UNAVAILABLE');
        assert.ok(!isCircuitOpen(outcome));
      }
      assert.equal(off.client.circuit.state, 'closed');
    } finally {
      r.client.close();
      off.client.close();
    }
  });

  test('one probe at a time: calls while it runs are refused, a probe that throws counts as not answering', async () => {
    const clock = { now: 0 };
    let probes = 0;
    let answer!: (answered: boolean) => void;
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 1_000, now: () => clock.now }, () => {
      probes += 1;
      return probes === 1
        ? new Promise<boolean>((resolve) => (answer = resolve))
        : Promise.reject(new Error('the probe itself broke'));
    });
    assert.deepEqual(breaker.admit(), { admitted: true });
    breaker.record(true);
    assert.equal(breaker.state, 'open');
    clock.now = 1_000;
    for (let i = 0; i < 3; i++) assert.deepEqual(breaker.admit(), { admitted: false, retryAfterMs: 1_000 });
    assert.equal(probes, 1);
    assert.equal(breaker.state, 'half_open');
    // A call admitted before the circuit opened that fails now changes nothing.
    breaker.record(true);
    answer(false);
    await breaker.probed();
    assert.equal(breaker.state, 'open');
    clock.now = 2_000;
    breaker.admit();
    await breaker.probed();
    assert.equal(probes, 2);
    assert.equal(breaker.state, 'open');
  });
});
