import fc from 'fast-check';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  dateToTimestamp,
  isoToTimestamp,
  millisToIso,
  pgUtcTextToTimestamp,
  timestampToDate,
  timestampToIso,
  timestampToMillis,
  type WireTimestamp,
} from './wire-time';

/** What ts-proto's `useDate=string` generated code did on each side of the hop. */
function oldFromTimestamp(t: WireTimestamp): string {
  let millis = (t.seconds || 0) * 1_000;
  millis += (t.nanos || 0) / 1_000_000;
  return new Date(millis).toISOString();
}
function oldToTimestamp(text: string): WireTimestamp {
  const date = new Date(text);
  return { seconds: Math.trunc(date.getTime() / 1_000), nanos: (date.getTime() % 1_000) * 1_000_000 };
}

const MAX_MS = 253_402_300_799_999;

describe('timestampToIso', () => {
  it('prints what Date#toISOString prints', () => {
    assert.equal(timestampToIso({ seconds: 0, nanos: 0 }), '1970-01-01T00:00:00.000Z');
    assert.equal(timestampToIso({ seconds: 1_795_424_724, nanos: 123_000_000 }), '2026-11-23T09:05:24.123Z');
    assert.equal(timestampToIso({ seconds: 1_709_164_800, nanos: 0 }), '2024-02-29T00:00:00.000Z');
    assert.equal(timestampToIso({ seconds: 1_709_251_199, nanos: 999_000_000 }), '2024-02-29T23:59:59.999Z');
    assert.equal(timestampToIso({ seconds: 1_767_225_599, nanos: 5_000_000 }), '2025-12-31T23:59:59.005Z');
    assert.equal(timestampToIso({ seconds: 253_402_300_799, nanos: 999_000_000 }), '9999-12-31T23:59:59.999Z');
  });

  it('truncates nanoseconds to the millisecond, as the Date round trip did', () => {
    assert.equal(timestampToIso({ seconds: 1, nanos: 999_999_999 }), '1970-01-01T00:00:01.999Z');
    assert.equal(timestampToIso({ seconds: 1, nanos: 1_999_999 }), '1970-01-01T00:00:01.001Z');
    assert.equal(
      timestampToIso({ seconds: 1_795_424_724, nanos: 999_999_999 }),
      oldFromTimestamp({ seconds: 1_795_424_724, nanos: 999_999_999 }),
    );
  });

  it('leaves years outside 1970-9999 to Date, with its errors', () => {
    assert.equal(
      timestampToIso({ seconds: -1, nanos: 500_000_000 }),
      oldFromTimestamp({ seconds: -1, nanos: 500_000_000 }),
    );
    assert.equal(timestampToIso({ seconds: 253_402_300_800, nanos: 0 }), '+010000-01-01T00:00:00.000Z');
    assert.equal(
      timestampToIso({ seconds: Number.NaN, nanos: 0 }),
      oldFromTimestamp({ seconds: Number.NaN, nanos: 0 }),
    );
    assert.throws(() => millisToIso(8.64e15 + 1), RangeError);
  });

  it('matches the Date round trip for any instant and any nanoseconds', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -62_135_596_800, max: 253_402_300_799 }),
        fc.integer({ min: 0, max: 999_999_999 }),
        (seconds, nanos) => {
          assert.equal(timestampToIso({ seconds, nanos }), oldFromTimestamp({ seconds, nanos }));
        },
      ),
      { numRuns: 20_000 },
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_MS }), (ms) => {
        assert.equal(millisToIso(ms), new Date(ms).toISOString());
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('isoToTimestamp', () => {
  it('reads the API form to whole milliseconds', () => {
    assert.deepEqual(isoToTimestamp('2026-11-23T09:05:24.123Z'), { seconds: 1_795_424_724, nanos: 123_000_000 });
    assert.deepEqual(isoToTimestamp('2024-02-29T23:59:59.999Z'), { seconds: 1_709_251_199, nanos: 999_000_000 });
    assert.deepEqual(isoToTimestamp('1970-01-01T00:00:00Z'), { seconds: 0, nanos: 0 });
    assert.deepEqual(isoToTimestamp('2026-01-31T09:30:00.5Z'), { seconds: 1_769_851_800, nanos: 500_000_000 });
  });

  it('gives what new Date(text) gave for other forms, impossible dates and nonsense', () => {
    for (const text of [
      '2026-02-28T23:30:00+01:00',
      '2026-02-29T00:00:00Z',
      '2026-04-31T00:00:00.000Z',
      '2026-01-01T24:00:00.000Z',
      '1969-12-31T23:59:59.999Z',
      '2024-02-29T00:00:00.123456789Z',
      '2026-11-23',
      '2026-11-23T09:05:24.Z',
      'not a time',
    ]) {
      assert.deepEqual(isoToTimestamp(text), oldToTimestamp(text), text);
    }
  });

  it('round-trips every instant the API prints', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_MS }), (ms) => {
        const iso = new Date(ms).toISOString();
        assert.deepEqual(isoToTimestamp(iso), oldToTimestamp(iso));
        assert.equal(timestampToIso(isoToTimestamp(iso)), iso);
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('pgUtcTextToTimestamp', () => {
  it('reads PostgreSQL timestamptz text of a UTC session, fraction trimmed or absent', () => {
    assert.deepEqual(pgUtcTextToTimestamp('2026-11-23 09:05:24.123+00'), {
      seconds: 1_795_424_724,
      nanos: 123_000_000,
    });
    assert.deepEqual(pgUtcTextToTimestamp('2026-11-23 09:05:24.12+00'), { seconds: 1_795_424_724, nanos: 120_000_000 });
    assert.deepEqual(pgUtcTextToTimestamp('2026-11-23 09:05:24.1+00'), { seconds: 1_795_424_724, nanos: 100_000_000 });
    assert.deepEqual(pgUtcTextToTimestamp('2026-11-23 09:05:24+00'), { seconds: 1_795_424_724, nanos: 0 });
    assert.deepEqual(pgUtcTextToTimestamp('2024-02-29 00:00:00+00'), { seconds: 1_709_164_800, nanos: 0 });
    assert.deepEqual(pgUtcTextToTimestamp('2025-12-31 23:59:59.999+00'), {
      seconds: 1_767_225_599,
      nanos: 999_000_000,
    });
    assert.deepEqual(pgUtcTextToTimestamp('2026-03-01 00:00:00+00'), { seconds: 1_772_323_200, nanos: 0 });
  });

  it('leaves other zones, longer fractions and years before 1970 to pg', () => {
    for (const text of [
      '2026-11-23 10:05:24.123+01',
      '2026-11-23 09:05:24.123-05:30',
      '2026-11-23 09:05:24.123456+00',
      '2026-11-23 09:05:24.+00',
      '2026-11-23T09:05:24.123+00',
      '1969-12-31 23:59:59+00',
      '0044-03-15 12:00:00+00 BC',
      'infinity',
    ]) {
      assert.equal(pgUtcTextToTimestamp(text), undefined, text);
    }
  });

  it('agrees with Date for every instant PostgreSQL prints to the millisecond', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_MS }), (ms) => {
        const iso = new Date(ms).toISOString();
        const pgText = `${iso.slice(0, 10)} ${iso.slice(11, 23).replace(/\.?0+$/, '')}+00`;
        assert.deepEqual(pgUtcTextToTimestamp(pgText), oldToTimestamp(iso), pgText);
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('Date conversions', () => {
  it('are whole milliseconds both ways', () => {
    const date = new Date('2026-11-23T09:05:24.123Z');
    assert.deepEqual(dateToTimestamp(date), { seconds: 1_795_424_724, nanos: 123_000_000 });
    assert.equal(timestampToDate({ seconds: 1_795_424_724, nanos: 123_456_789 }).toISOString(), date.toISOString());
    assert.equal(timestampToMillis({ seconds: 1_795_424_724, nanos: 123_456_789 }), 1_795_424_724_123);
  });
});
