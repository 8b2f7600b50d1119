import fc from 'fast-check';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRfc3339 } from './timestamps';

const problem = (value: string) => {
  const r = parseRfc3339(value);
  return 'problem' in r ? r.problem : undefined;
};

describe('parseRfc3339', () => {
  it('normalises valid date-times to UTC with milliseconds', () => {
    assert.deepEqual(parseRfc3339('2026-02-28T23:30:00+01:00'), { iso: '2026-02-28T22:30:00.000Z' });
    assert.deepEqual(parseRfc3339('2024-02-29t00:00:00.123456789z'), { iso: '2024-02-29T00:00:00.123Z' });
    assert.deepEqual(parseRfc3339('0001-01-01T00:00:00Z'), { iso: '0001-01-01T00:00:00.000Z' });
    assert.deepEqual(parseRfc3339('9999-12-31T23:59:59.999Z'), { iso: '9999-12-31T23:59:59.999Z' });
  });

  it('refuses dates that do not exist instead of shifting them', () => {
    assert.equal(problem('2026-02-29T00:00:00Z'), 'no such calendar date');
    assert.equal(problem('2026-02-30T00:00:00Z'), 'no such calendar date');
    assert.equal(problem('1900-02-29T00:00:00Z'), 'no such calendar date');
    assert.equal(problem('2026-04-31T00:00:00Z'), 'no such calendar date');
    assert.equal(problem('2026-13-01T00:00:00Z'), 'no such calendar date');
    assert.equal(problem('2026-00-10T00:00:00Z'), 'no such calendar date');
    assert.equal(problem('2026-01-01T24:00:00Z'), 'no such time of day');
    assert.equal(problem('2026-01-01T12:60:00Z'), 'no such time of day');
    assert.equal(problem('2026-01-01T12:00:60Z'), 'no such time of day');
    assert.equal(problem('2026-01-01T12:00:00+24:00'), 'no such UTC offset');
  });

  it('refuses instants PostgreSQL cannot store', () => {
    assert.match(problem('0000-06-01T00:00:00Z')!, /outside the years/);
    assert.match(problem('0001-01-01T00:30:00+01:00')!, /outside the years/);
    assert.match(problem('9999-12-31T23:30:00-01:00')!, /outside the years/);
  });

  it('refuses what is not RFC 3339', () => {
    for (const value of ['2026-01-01', '2026-01-01T00:00:00', '2026-01-01 00:00:00Z', '+002026-01-01T00:00:00Z', ''])
      assert.match(problem(value)!, /not an RFC 3339/);
  });

  it('never throws, and what it accepts is a storable instant that round-trips (property)', () => {
    const digits = (n: number) => fc.stringMatching(new RegExp(`^\\d{${n}}$`));
    const shaped = fc
      .tuple(digits(4), digits(2), digits(2), digits(2), digits(2), digits(2), fc.constantFrom('Z', '+14:00', '-23:59'))
      .map(([y, mo, d, h, mi, s, z]) => `${y}-${mo}-${d}T${h}:${mi}:${s}${z}`);
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), shaped), (value) => {
        const r = parseRfc3339(value);
        if ('iso' in r) {
          const year = Number(r.iso.slice(0, 4));
          assert.ok(year >= 1 && year <= 9999);
          assert.equal(Date.parse(r.iso), Date.parse(value));
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('accepts every real instant of years 1-9999 written in UTC (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.parse('0001-01-01T00:00:00Z'), max: Date.parse('9999-12-31T23:59:59.999Z') }),
        (ms) => {
          const iso = new Date(ms).toISOString();
          assert.deepEqual(parseRfc3339(iso), { iso });
        },
      ),
    );
  });
});
