// The noisy neighbour's verdict, over made-up answers (the run itself: `npm run chaos -- --only noisy`).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assertLoopback,
  emailSearch,
  judgeNoisyNeighbour,
  noisyAnswerAccepted,
  noisyMix,
  noisyNeighbourRows,
  type NoisyRun,
  type NoisySample,
} from './noisy-neighbour';

const QUIET = { from: 0, to: 10_000 };
const FLOOD = { from: 10_000, to: 20_000 };
const AFTER = { from: 20_000, to: 30_000 };

const quiet = (startedAt: number, ms: number, status = 200): NoisySample => ({
  organization: 'quiet',
  overBudget: false,
  startedAt,
  endedAt: startedAt + ms,
  status,
  retryAfter: status === 429,
  stream: 'quiet',
  route: '/v1/users/me',
});

const noisy = (startedAt: number, status: number, extra: Partial<NoisySample> = {}): NoisySample => ({
  organization: 'noisy',
  overBudget: false,
  startedAt,
  endedAt: startedAt + 50,
  status,
  retryAfter: status === 429,
  stream: 'noisy',
  route: '/v1/users/{id}/drives limit 1000',
  ...extra,
});

/**
 * 100 quiet answers alone (10 ms: 50 before the flood, 50 after) and 100 beside it (`besideMs`), and a noisy
 * organization served and refused.
 */
function run(besideMs = 20, extra: NoisySample[] = [], noisySamples?: NoisySample[]): NoisyRun {
  return {
    quietPhase: QUIET,
    floodPhase: FLOOD,
    afterPhase: AFTER,
    samples: [
      ...Array.from({ length: 50 }, (_, i) => quiet(i * 200, 10)),
      ...Array.from({ length: 100 }, (_, i) => quiet(10_000 + i * 100, besideMs)),
      ...Array.from({ length: 50 }, (_, i) => quiet(20_000 + i * 200, 10)),
      ...(noisySamples ?? [
        noisy(10_000, 200),
        noisy(10_010, 429),
        noisy(10_020, 400, { overBudget: true, route: 'SCIM /Users 63 × co, count 1000' }),
        noisy(10_030, 429, { overBudget: true, route: 'SCIM /Users 63 × co, count 1000' }),
      ]),
      ...extra,
    ],
  };
}

describe('judgeNoisyNeighbour', () => {
  test('passes when the quiet organization is all 2xx within 3× and the noisy one is refused as promised', () => {
    const verdict = judgeNoisyNeighbour(run(29));
    assert.deepEqual(verdict.quietProblems, []);
    assert.deepEqual(verdict.noisyProblems, []);
    assert.equal(verdict.quietAlone.p99Ms, 10);
    assert.equal(verdict.quietBeside.p99Ms, 29);
    assert.equal(verdict.p99Ratio, 2.9);
    assert.equal(verdict.noisy.count, 4);
    assert.ok(noisyNeighbourRows(verdict).every((row) => row.verdict === 'pass' && row.required));
  });

  test('fails the quiet organization when its p99 beside the flood is over 3× its p99 alone', () => {
    const verdict = judgeNoisyNeighbour(run(31));
    assert.equal(verdict.p99Ratio, 3.1);
    assert.equal(verdict.quietProblems.length, 1);
    assert.match(verdict.quietProblems[0]!, /3\.1× its 10 ms alone/);
    const [quietRow, noisyRow] = noisyNeighbourRows(verdict);
    assert.equal(quietRow!.verdict, 'FAIL');
    assert.equal(noisyRow!.verdict, 'pass');
  });

  test('a single slow quiet answer among a hundred is within the p99, two are not', () => {
    assert.deepEqual(judgeNoisyNeighbour(run(10, [quiet(15_050, 500)])).quietProblems, []);
    const two = judgeNoisyNeighbour(run(10, [quiet(15_050, 500), quiet(15_060, 500)]));
    assert.match(two.quietProblems.join(), /p99 500 ms/);
  });

  test('one 5xx, one 429 or one timeout of the quiet organization fails it, in any phase', () => {
    for (const [at, status, phase] of [
      [12_000, 503, /^beside the flood/],
      [12_000, 429, /^beside the flood/],
      [12_000, 0, /^beside the flood/],
      [5_000, 504, /^before the flood/],
      [25_000, 503, /^after the flood/],
    ] as const) {
      const verdict = judgeNoisyNeighbour(run(10, [quiet(at, 10, status)]));
      assert.equal(verdict.quietProblems.length, 1, `${status} at ${at}`);
      assert.match(verdict.quietProblems[0]!, phase);
    }
  });

  test('the p99 without the flood is of the answers on both sides of it', () => {
    // Two slow answers, one on each side: two of a hundred alone, over the p99 as one side alone would have it too.
    const verdict = judgeNoisyNeighbour(run(29, [quiet(1_050, 25), quiet(25_050, 25)]));
    assert.equal(verdict.quietAlone.count, 102);
    assert.ok(verdict.quietAlone.p99Ms > 10, `p99 alone ${verdict.quietAlone.p99Ms}`);
    assert.deepEqual(verdict.quietProblems, []);
  });

  test('too few quiet answers in a phase say nothing: the run fails', () => {
    const verdict = judgeNoisyNeighbour({
      quietPhase: QUIET,
      floodPhase: FLOOD,
      afterPhase: AFTER,
      samples: [quiet(0, 10), quiet(10_000, 10), quiet(20_000, 10), noisy(10_000, 200), noisy(10_001, 429)],
    });
    assert.deepEqual(
      verdict.quietProblems.map((p) => p.slice(0, p.indexOf('('))),
      [
        'only 1 quiet answers before the flood ',
        'only 1 quiet answers beside the flood ',
        'only 1 quiet answers after the flood ',
      ],
    );
  });

  test('a side without the flood that has half the answers needed is not enough alone', () => {
    const onlyBefore = run(10).samples.filter((s) => s.startedAt < AFTER.from);
    const verdict = judgeNoisyNeighbour({ ...run(10), samples: onlyBefore });
    assert.deepEqual(verdict.quietProblems, ['only 0 quiet answers after the flood (at least 50 needed)']);
  });

  test('the noisy organization fails on a 5xx, no answer, or a 429 that does not say when', () => {
    for (const bad of [
      noisy(10_500, 503),
      noisy(10_500, 504),
      noisy(10_500, 0),
      noisy(10_500, 429, { retryAfter: false }),
      noisy(10_500, 500),
    ]) {
      const verdict = judgeNoisyNeighbour(run(10, [bad]));
      assert.deepEqual(verdict.quietProblems, []);
      assert.equal(verdict.noisyProblems.length, 1, `status ${bad.status}`);
      assert.match(verdict.noisyProblems[0]!, /^not as promised: 1 × /);
      assert.equal(noisyNeighbourRows(verdict)[1]!.verdict, 'FAIL');
    }
  });

  test('a filter over the budget must not be served; 400 only for SCIM filters', () => {
    const served = judgeNoisyNeighbour(
      run(10, [noisy(10_500, 200, { overBudget: true, route: 'SCIM /Users 63 × co, count 1000' })]),
    );
    assert.match(served.noisyProblems.join(), /1 × 200 on SCIM \/Users 63 × co/);
    const refusedPage = judgeNoisyNeighbour(run(10, [noisy(10_500, 400)]));
    assert.match(refusedPage.noisyProblems.join(), /1 × 400 on \/v1\/users\/\{id\}\/drives limit 1000/);
  });

  test('a noisy organization never refused met no limit; one never served was locked out', () => {
    const neverRefused = judgeNoisyNeighbour(run(10, [], [noisy(10_000, 200), noisy(10_100, 200)]));
    assert.deepEqual(neverRefused.noisyProblems, ['never 429: the flood met no limit of its share']);
    const lockedOut = judgeNoisyNeighbour(run(10, [], [noisy(10_000, 429), noisy(10_100, 429)]));
    assert.deepEqual(lockedOut.noisyProblems, ['nothing served: locked out rather than given its share']);
    const silent = judgeNoisyNeighbour(run(10, [], []));
    assert.deepEqual(silent.noisyProblems, ['the noisy organization sent nothing']);
  });

  test('answers outside the phases are not judged', () => {
    const verdict = judgeNoisyNeighbour(run(10, [quiet(30_000, 10, 503), noisy(9_999, 503), noisy(20_000, 500)]));
    assert.deepEqual(verdict.quietProblems, []);
    assert.deepEqual(verdict.noisyProblems, []);
  });

  test('a quiet answer still in flight when the flood began, or sent before its last answer, counts in no phase', () => {
    const lateFlood = run(10, [quiet(9_990, 3_000), quiet(9_995, 2_000), quiet(20_010, 900)]);
    // The flood's last answer at 20,020: the quiet answers sent at 20,000 and 20,010 are in no phase.
    const verdict = judgeNoisyNeighbour({ ...lateFlood, afterPhase: { from: 20_020, to: AFTER.to } });
    assert.equal(verdict.quietAlone.count, 99);
    assert.equal(verdict.quietAlone.p99Ms, 10);
    assert.equal(verdict.quietBeside.count, 100);
  });
});

describe('the scenario', () => {
  test('accepts the noisy answers the contract allows', () => {
    assert.equal(noisyAnswerAccepted(noisy(0, 200)), true);
    assert.equal(noisyAnswerAccepted(noisy(0, 429)), true);
    assert.equal(noisyAnswerAccepted(noisy(0, 400, { route: 'SCIM /Users 8 × co, count 1000' })), true);
    assert.equal(noisyAnswerAccepted(noisy(0, 401)), false);
  });

  test('floods an over-budget or-filter of 63 unindexed terms and pages of 1,000', () => {
    const mix = noisyMix({
      scimToken: 's',
      groupAdminToken: 'a',
      groupId: 7,
      driver: { userId: 'N000000002', token: 'd' },
    });
    const overBudget = mix.filter((r) => r.overBudget);
    assert.equal(overBudget.length, 1);
    const filter = new URLSearchParams(overBudget[0]!.path.split('?')[1]).get('filter')!;
    assert.equal(filter, emailSearch(63));
    assert.equal(filter.split(' or ').length, 63);
    assert.ok(mix.some((r) => r.path === '/v1/groups/7/reported-drives?limit=1000' && r.token === 'a'));
    assert.ok(mix.some((r) => r.path === '/v1/users/N000000002/drives?limit=1000' && r.token === 'd'));
  });

  test('sends to loopback only', () => {
    for (const url of ['http://127.0.0.1:8080', 'http://127.0.0.2:1', 'http://localhost:8080', 'http://[::1]:80'])
      assert.doesNotThrow(() => assertLoopback(url));
    for (const url of ['http://10.0.0.1:8080', 'https://api.example.com', 'http://127.0.0.1.example.com'])
      assert.throws(() => assertLoopback(url), /loopback only/);
  });
});
