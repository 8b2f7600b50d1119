/**
 * The gateway in front of a frozen Drives service (a TCP relay that stops relaying: what SIGSTOP does to a process,
 * connections open, calls hanging): after the circuit breaker's threshold of calls that waited out their deadline
 * (504), drive routes answer 503 at once with `Retry-After` the time the circuit stays open, other routes keep
 * answering, and after the service is back the breaker's probe (a health check, not a client's request) closes the
 * circuit. The breaker's clock is the test's.
 */
import { Metrics } from '@mileage/runtime/telemetry';
import { startFaultProxy, type FaultProxy } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { startHarness, type Harness } from './harness';

let h: Harness;
let drives: FaultProxy;
let bob: string;

before(async () => {
  h = await startHarness();
  const [host = '', port = ''] = h.drivesAddress.split(':');
  drives = await startFaultProxy({ host, port: Number(port) });
  bob = await h.token('bob@example.com', 'users_read drives_read');
});

after(async () => {
  await drives?.close();
  await h?.close();
});

describe('circuit breaker at the gateway', () => {
  test('a frozen service: 504s up to the threshold, then fast 503s with Retry-After; back after one probe', async () => {
    const clock = { now: 1_700_000_000_000 };
    let closed!: () => void;
    const circuitClosed = new Promise<void>((resolve) => (closed = resolve));
    const metrics = new Metrics('gateway');
    const app = h.app({
      drivesAddress: drives.address,
      // Long enough for a loaded machine; the frozen calls take exactly this long.
      deadlineMs: 1_500,
      circuitBreaker: {
        failureThreshold: 3,
        openMs: 4_000,
        now: () => clock.now,
        onTransition: (change) => change.to === 'closed' && closed(),
      },
      metrics,
      // The health checks would also find Drives down (after two failed rounds): kept out of the way here.
      dependencyIntervalMs: 600_000,
    });
    const drivesRoute = () => request(app).get('/v1/users/BobDriver1/drives').set('Authorization', `Bearer ${bob}`);
    const me = () => request(app).get('/v1/users/me').set('Authorization', `Bearer ${bob}`);
    const circuitState = async () =>
      (await metrics.grpcClientCircuitState.get()).values.find(
        (v) => v.labels.grpc_service === 'mileage.drives.v1.DrivesService',
      )?.value;

    assert.equal((await drivesRoute()).status, 200);
    drives.freeze();
    try {
      // Three calls wait out their deadline together: 504 each, and the circuit opens.
      const timedOut = await Promise.all([drivesRoute(), drivesRoute(), drivesRoute()]);
      assert.deepEqual(
        timedOut.map((r) => r.status),
        [504, 504, 504],
      );
      assert.equal(await circuitState(), 2);

      // Open: 503 at once (the circuit's error, not the deadline's 504), Retry-After the time it stays open.
      const refused = await drivesRoute();
      assert.equal(refused.status, 503);
      assert.equal(refused.headers['retry-after'], '4');
      assert.equal(refused.body.detail, 'A backing service is unavailable; try again shortly');
      clock.now += 2_500;
      assert.equal((await drivesRoute()).headers['retry-after'], '2');
      // Routes that do not need Drives keep answering.
      assert.equal((await me()).status, 200);
    } finally {
      await drives.resume();
    }
    // The service is back (SIGCONT). Past the open time the next request starts the probe and is refused at once
    // (Retry-After 1 s, the probe's bound) rather than waiting to find out; the probe answers and the circuit closes.
    clock.now += 1_500;
    const duringProbe = await drivesRoute();
    assert.equal(duringProbe.status, 503);
    assert.equal(duringProbe.headers['retry-after'], '1');
    await circuitClosed;
    assert.equal(await circuitState(), 0);
    assert.equal((await drivesRoute()).status, 200);
    assert.equal((await drivesRoute()).status, 200);
    const transitions = Object.fromEntries(
      (await metrics.grpcClientCircuitTransitions.get()).values
        .filter((v) => v.labels.grpc_service === 'mileage.drives.v1.DrivesService')
        .map((v) => [String(v.labels.to), v.value]),
    );
    assert.deepEqual(transitions, { open: 1, half_open: 1, closed: 1 });
  });
});
