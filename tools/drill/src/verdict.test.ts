import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ExposureMeter, judge, type LedgerEntry } from './verdict';

const entry = (key: string, sentAt: number, ackedAt: number, lsn = 0n): LedgerEntry => ({
  kind: 'drive',
  key,
  sentAt,
  ackedAt,
  lsn,
});

describe('judge', () => {
  const T = 1_000;
  const ledger = [entry('early', 100, 200), entry('span', 990, 1_010), entry('late', 1_100, 1_200)];

  test('everything acknowledged before T there and nothing sent after it: no findings', () => {
    const result = judge(ledger, T, (e) => e.key !== 'late');
    assert.deepEqual(
      { ...result, lost: result.lost.length, resurrected: result.resurrected.length },
      {
        lost: 0,
        resurrected: 0,
        straddling: 1,
        before: 1,
        after: 1,
      },
    );
  });

  test('a lost write and a write past T are both found; a write spanning T is right either way', () => {
    const result = judge(ledger, T, (e) => e.key !== 'early');
    assert.deepEqual(
      result.lost.map((e) => e.key),
      ['early'],
    );
    assert.deepEqual(
      result.resurrected.map((e) => e.key),
      ['span', 'late'].filter((k) => k === 'late'),
    );
  });
});

describe('ExposureMeter', () => {
  test('the age of the oldest acknowledged write the archive lacks, the worst sample being the RPO', () => {
    const ledger = [entry('a', 0, 1_000, 100n), entry('b', 0, 2_000, 300n), entry('c', 0, 9_000, 500n)];
    const meter = new ExposureMeter(ledger);
    assert.equal(meter.sample(1_500, 0n), 500, 'a not archived yet');
    assert.equal(meter.sample(5_000, 200n), 3_000, 'a archived, b not');
    assert.equal(meter.sample(8_000, 400n), 0, 'both archived; c not acknowledged yet');
    assert.equal(meter.rpoMs, 3_000);
    assert.equal(meter.sampleCount, 3);
  });
});
