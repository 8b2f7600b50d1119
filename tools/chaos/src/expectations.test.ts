// Each fault's expectation row with answers it must accept and answers it must fail, judged as a run judges them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  allSucceed,
  keyRotation,
  postgresRestart,
  recovered,
  replicaFrozen,
  rollingRestart,
  secretTokenProblems,
  serviceFrozen,
  unknownKeyWhileJwksDown,
} from './expectations';
import { judge, type Sample } from './report';

/** A request started at `startedAt` (ms) that took `ms` and got `status`. */
const req = (startedAt: number, ms: number, status: number, retryAfter = status === 503): Sample => ({
  startedAt,
  endedAt: startedAt + ms,
  status,
  retryAfter,
  stream: 'main',
  route: '/v1/users/me',
});
/** 2xx answers every 100 ms over [from, to). */
const steady = (from: number, to: number) =>
  Array.from({ length: Math.ceil((to - from) / 100) }, (_, i) => req(from + i * 100, 10, 200));

describe('every request 2xx', () => {
  test('passes 2xx only; a single 5xx or no answer fails the row', () => {
    const e = allSucceed('0 failed');
    assert.equal(judge('redis', e, steady(0, 3000)).verdict, 'pass');
    assert.equal(judge('redis', e, [...steady(0, 3000), req(1500, 5, 500)]).verdict, 'FAIL');
    assert.equal(judge('redis', e, [...steady(0, 3000), req(1500, 5, 0)]).verdict, 'FAIL');
    assert.equal(judge('redis', e, []).verdict, 'FAIL', 'a window without requests proves nothing');
  });
});

describe('rolling restart', () => {
  test('fails on an unclean drain even when every request succeeded', () => {
    const unclean: string[] = [];
    const e = rollingRestart(unclean);
    assert.equal(judge('rolling', e, steady(0, 2000)).verdict, 'pass');
    unclean.push('users-a exited 1 after 20000 ms');
    const row = judge('rolling', e, steady(0, 2000));
    assert.equal(row.verdict, 'FAIL');
    assert.deepEqual(row.notes, ['unclean drain: users-a exited 1 after 20000 ms']);
  });
});

describe('PostgreSQL restart', () => {
  const marks = { downAt: 1000, upAt: 3000 };
  const RECOVERY = 1000;
  const expectation = (restarted = false) => postgresRestart(marks, RECOVERY, () => restarted);
  const tail = steady(5000, 6000);

  test('accepts 503 + Retry-After from the stop to the recovery, and an answer in flight at the stop', () => {
    const samples = [req(900, 200, 503), req(2000, 5, 503), req(3999, 5, 503), ...tail];
    assert.equal(judge('pg', expectation(), samples).verdict, 'pass');
  });

  test('fails a 503 before it went down or after the recovery, one without Retry-After, and any 500', () => {
    for (const bad of [req(500, 100, 503), req(4100, 5, 503), req(2000, 5, 503, false), req(2000, 5, 500)])
      assert.equal(judge('pg', expectation(), [bad, ...tail]).verdict, 'FAIL', JSON.stringify(bad));
  });

  test('fails without recovery by the end, or when a process was restarted', () => {
    // Every answer is one the fault may give, but the window ends still answering 503.
    const stillDown = [...steady(0, 900), ...Array.from({ length: 30 }, (_, i) => req(1000 + i * 100, 5, 503))];
    const unrecovered = judge('pg', expectation(), stillDown);
    assert.equal(unrecovered.failed, 0);
    assert.equal(unrecovered.verdict, 'FAIL');
    assert.match(unrecovered.notes.join('; '), /not recovered: 10 of the last second's 10 requests failed/);
    const row = judge('pg', expectation(true), tail);
    assert.equal(row.verdict, 'FAIL');
    assert.deepEqual(row.notes, ['a process was restarted']);
  });
});

describe('one replica frozen', () => {
  const marks = { frozenAt: 1000, thawedAt: 5000 };
  const gateway = { deadlineMs: 2000 };
  const e = replicaFrozen(marks, gateway);

  test('is required; accepts 504s and 503s of requests sent within one deadline of the freeze', () => {
    assert.equal(e.required, true);
    const samples = [req(800, 2000, 504), req(1500, 1200, 503), req(2900, 2000, 504), ...steady(3000, 6000)];
    assert.equal(judge('freeze', e, samples).verdict, 'pass');
  });

  test('fails a request sent later than one deadline after the freeze, after the thaw, or a 503 without Retry-After', () => {
    for (const bad of [
      req(3100, 5, 503),
      req(3100, 2000, 504),
      req(5200, 5, 503),
      req(1500, 5, 503, false),
      req(900, 5, 500),
    ])
      assert.equal(judge('freeze', e, [bad, ...steady(3000, 6000)]).verdict, 'FAIL', JSON.stringify(bad));
  });
});

describe('a whole service frozen', () => {
  const marks = { frozenAt: 1000, thawedAt: 5000 };
  const gateway = { deadlineMs: 2000, openMs: 3000 };
  const e = serviceFrozen(marks, gateway);
  const tail = steady(9000, 10000);

  test('accepts 504 (or a slow 503) until the breaker opens, then fast 503 + Retry-After until it closes', () => {
    const samples = [
      req(800, 2000, 504),
      req(3900, 2000, 504),
      req(3000, 1500, 503),
      req(4000, 10, 503),
      req(8900, 10, 503),
      ...tail,
    ];
    assert.equal(judge('frozen', e, samples).verdict, 'pass');
  });

  test('fails a 504 or a slow 503 once the breaker should be open, and a 503 after the breaker closed', () => {
    for (const bad of [req(4100, 2000, 504), req(4100, 600, 503), req(9100, 10, 503), req(4000, 10, 503, false)])
      assert.equal(judge('frozen', e, [bad, ...tail]).verdict, 'FAIL', JSON.stringify(bad));
  });
});

describe('a token of an unseen key while the JWKS is down', () => {
  test('accepts only 503 + Retry-After, never 401 or 200, and needs the key accepted after', () => {
    let recoveredMs: number | undefined = 1200;
    const e = unknownKeyWhileJwksDown(() => recoveredMs);
    assert.equal(judge('jwks', e, [req(0, 5, 503), req(100, 5, 503)]).verdict, 'pass');
    assert.equal(judge('jwks', e, [req(0, 5, 503), req(100, 5, 401, false)]).verdict, 'FAIL');
    assert.equal(judge('jwks', e, [req(0, 5, 200)]).verdict, 'FAIL');
    recoveredMs = undefined;
    assert.deepEqual(judge('jwks', e, [req(0, 5, 503)]).notes.slice(-1), [
      'not accepted within 30 s of the provider coming back',
    ]);
  });
});

describe('recovered', () => {
  test("judges the window's last second only", () => {
    assert.equal(recovered([req(0, 5, 503), ...steady(1000, 3000)]), undefined);
    assert.equal(
      recovered([...steady(1000, 3000), req(2950, 5, 503)]),
      "not recovered: 1 of the last second's 11 requests failed",
    );
  });
});

describe('a SCIM secret token rotated and revoked across both gateways', () => {
  const held = {
    firstServed: true,
    overlapServed: true,
    firstAfterRevocation: { a: 401, b: 401 },
    refusedAfterMs: { a: 3, b: 4 },
    survivorServed: true,
  };
  test('holds when both gateways refuse the first request after the 204 and the new one keeps working', () => {
    assert.deepEqual(secretTokenProblems(held), []);
  });

  test('names a gateway that served the revoked token after the 204 (and for how long), and a broken overlap', () => {
    assert.deepEqual(
      secretTokenProblems({
        ...held,
        overlapServed: false,
        firstAfterRevocation: { a: 200, b: 200 },
        refusedAfterMs: { a: 4_900, b: undefined },
      }),
      [
        'the old and the new token were not both served during the rotation',
        'gateway A answered the first request after the 204 with 200; refused it only after 4900 ms',
        'gateway B answered the first request after the 204 with 200 and still served the revoked token',
      ],
    );
  });
});

describe('key rotation', () => {
  test('fails on a cursor issued before that a gateway no longer continues, even when every request succeeded', () => {
    const stale: string[] = [];
    const e = keyRotation(stale);
    assert.equal(judge('rotation', e, steady(0, 3000)).verdict, 'pass');
    assert.equal(judge('rotation', e, [...steady(0, 3000), req(1500, 5, 503)]).verdict, 'FAIL');
    stale.push('a cursor issued before the rotation got 422 on gateway B');
    const row = judge('rotation', e, steady(0, 3000));
    assert.equal(row.verdict, 'FAIL');
    assert.ok(row.notes.includes('a cursor issued before the rotation got 422 on gateway B'));
  });
});
