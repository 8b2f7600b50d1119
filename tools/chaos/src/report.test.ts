// The verdict logic of `npm run chaos` (the run itself is the integration test: CI runs it with --short).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  exitCode,
  failureEvidence,
  formatTable,
  is2xx,
  judge,
  quantile,
  window,
  type Expectation,
  type Sample,
} from './report';

const sample = (startedAt: number, ms: number, status: number, extra: Partial<Sample> = {}): Sample => ({
  startedAt,
  endedAt: startedAt + ms,
  status,
  retryAfter: false,
  stream: 'main',
  route: '/v1/users/me',
  ...extra,
});
const zeroFailed: Expectation = { text: '0 failed', required: true, accepts: is2xx };

describe('quantile', () => {
  test('nearest rank', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.equal(quantile(values, 0.99), 99);
    assert.equal(quantile(values, 0.5), 50);
    assert.equal(quantile([7], 0.99), 7);
    assert.equal(quantile([], 0.99), 0);
  });
});

describe('judge', () => {
  test('counts failures, p99 and max; passes only with none', () => {
    const samples = [
      ...Array.from({ length: 99 }, (_, i) => sample(i, 10, 200)),
      sample(100, 900, 503, { retryAfter: true }),
    ];
    const row = judge('rolling restart', zeroFailed, samples, 0);
    assert.equal(row.requests, 100);
    assert.equal(row.failed, 1);
    assert.equal(row.p99Ms, 10);
    assert.equal(row.maxMs, 900);
    assert.equal(row.verdict, 'FAIL');
    assert.deepEqual(row.notes, [
      '1 × 503 (Retry-After) on /v1/users/me',
      'failed requests started from +0.1 s to +0.1 s',
    ]);
    assert.equal(judge('rolling restart', zeroFailed, samples.slice(0, 99)).verdict, 'pass');
  });

  test('a connection that got no answer is a failure', () => {
    const row = judge('x', zeroFailed, [sample(0, 1, 200), sample(1, 1, 0)]);
    assert.equal(row.failed, 1);
    assert.match(row.notes[0]!, /no answer/);
  });

  test('answers the expectation allows are not failures, and are listed', () => {
    const down: Expectation = {
      text: '503 + Retry-After while down',
      required: true,
      accepts: (s) => is2xx(s) || (s.status === 503 && s.retryAfter && s.startedAt < 50),
    };
    const row = judge('PostgreSQL restart', down, [
      sample(0, 5, 503, { retryAfter: true }),
      sample(10, 5, 503, { retryAfter: true }),
      sample(20, 5, 503),
      sample(60, 5, 503, { retryAfter: true }),
      sample(70, 5, 200),
    ]);
    assert.equal(row.failed, 2);
    assert.ok(row.notes.includes('as expected: 2 × 503 (Retry-After)'));
  });

  test('a window check that does not hold fails the row; not required rows never fail the run', () => {
    const notRecovered: Expectation = { ...zeroFailed, required: false, check: () => 'not recovered' };
    const row = judge('frozen replica', notRecovered, [sample(0, 1, 200)]);
    assert.equal(row.failed, 0);
    assert.equal(row.verdict, 'not met (not required)');
    assert.deepEqual(row.notes, ['not recovered']);
    assert.equal(exitCode([row]), 0);
    assert.equal(exitCode([row, judge('baseline', zeroFailed, [sample(0, 1, 500)])]), 1);
  });

  test('a window without requests fails', () => {
    const row = judge('x', zeroFailed, []);
    assert.equal(row.verdict, 'FAIL');
    assert.deepEqual(row.notes, ['no requests were sent']);
  });
});

describe('window and table', () => {
  test('a window holds the stream asked for, by start time', () => {
    const samples = [
      sample(0, 1, 200),
      sample(5, 1, 200),
      sample(5, 1, 503, { stream: 'new-key' }),
      sample(10, 1, 200),
    ];
    assert.equal(window(samples, 0, 10).length, 2);
    assert.equal(window(samples, 0, 10, 'new-key').length, 1);
  });

  test('a Markdown table with numbers right-aligned, then the notes', () => {
    const rows = [
      judge('baseline', zeroFailed, [sample(0, 12, 200)]),
      judge('frozen', { ...zeroFailed, required: false }, [sample(0, 2000, 504)]),
    ];
    assert.equal(
      formatTable(rows),
      [
        '| fault | expectation | requests | failed | p99 ms | max ms | verdict |',
        '|---|---|---:|---:|---:|---:|---|',
        '| baseline | 0 failed | 1 | 0 | 12 | 12 | pass |',
        '| frozen | 0 failed (not required) | 1 | 1 | 2000 | 2000 | not met (not required) |',
        '',
        '- frozen: 1 × 504 on /v1/users/me',
      ].join('\n'),
    );
  });
});

describe('failureEvidence', () => {
  test('names each failed request and puts the log lines that name one of them first', () => {
    const failed = [
      sample(1_500, 5, 503, {
        retryAfter: true,
        failure: { requestId: 'req-1', detail: 'The service is unavailable; try again shortly' },
      }),
      sample(2_000, 5, 0, { failure: { requestId: '', detail: 'fetch failed' } }),
    ];
    const evidence = failureEvidence(
      failed,
      [
        { replica: 'drives-a', line: '{"level":"warn","msg":"dependency is down"}' },
        { replica: 'gateway-a', line: '{"level":"warn","request_id":"req-1","msg":"downstream unavailable"}' },
      ],
      0,
    );
    assert.deepEqual(evidence, [
      'failed: /v1/users/me 503 at +1.5 s (request req-1): The service is unavailable; try again shortly',
      'failed: /v1/users/me no answer at +2.0 s: fetch failed',
      'warnings and errors of the replicas in the window (2):',
      '  gateway-a: {"level":"warn","request_id":"req-1","msg":"downstream unavailable"}',
      '  drives-a: {"level":"warn","msg":"dependency is down"}',
    ]);
  });
});
