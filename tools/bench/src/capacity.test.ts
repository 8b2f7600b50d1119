// Capacity per core from a full-path run: the processes that took part, less their idle CPU, PostgreSQL apart.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { callsPerRequest, capacity, capacityLine, takingPart } from './capacity';

describe('capacity per core', () => {
  it('counts only the components whose served-request counter grew', () => {
    assert.deepEqual(
      takingPart({ gateway: 10, users: 5, groups: 7, drives: 0 }, { gateway: 9010, users: 9005, groups: 7, drives: 0 }),
      ['gateway', 'users'],
    );
    // A component first read after the run began counts from zero.
    assert.deepEqual(takingPart({}, { scim: 3 }), ['scim']);
  });

  it("takes each component's idle CPU off its CPU per request, and leaves PostgreSQL and idle processes out", () => {
    // 1000 req/s; the gateway idles at 10 ms/s, which is 10 µs of each request's 410.
    const run = {
      requestsPerSecond: 1000,
      cpuByProcess: { gateway: 410, users: 205, groups: 12, 'pg:users': 300, postgres: 40 },
    };
    const c = capacity(run, { gateway: 0.01, users: 0.005, groups: 0.012, postgres: 0 }, ['gateway', 'users']);
    assert.deepEqual(c.components, ['gateway', 'users']);
    assert.deepEqual(c.cpuMicrosPerRequest, { gateway: 400, users: 200 });
    assert.equal(c.requestsPerSecondPerCore, 1667);
    assert.deepEqual(c.byComponent, { gateway: 2500, users: 5000 });
    assert.equal(
      capacityLine(c),
      '  capacity: 1667 req/s per core (CPU µs/req less idle: gateway 400 + users 200; PostgreSQL apart); ' +
        'req/s one core of each serves: gateway 2500, users 5000',
    );
  });

  it('states no bound for a component whose CPU did not rise above its idle', () => {
    const c = capacity({ requestsPerSecond: 100, cpuByProcess: { gateway: 500, scim: 90 } }, { scim: 0.01 }, [
      'gateway',
      'scim',
    ]);
    assert.deepEqual(c.cpuMicrosPerRequest, { gateway: 500, scim: 0 });
    assert.deepEqual(c.byComponent, { gateway: 2000 });
    assert.equal(c.requestsPerSecondPerCore, 2000);
  });
});

it('calls per request: the calls each service served per gateway request, idle services left out', () => {
  assert.deepEqual(
    callsPerRequest({ gateway: 10, users: 5, groups: 7 }, { gateway: 1010, users: 2505, groups: 7, drives: 1000 }),
    { users: 2.5, drives: 1 },
  );
  assert.equal(callsPerRequest({ gateway: 10 }, { gateway: 10, users: 40 }), undefined);
});
