import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ISO_TIMESTAMPS } from './rows';

test('ISO_TIMESTAMPS turns PostgreSQL timestamptz text into what Date.toISOString prints', () => {
  const parse = ISO_TIMESTAMPS.getTypeParser(1184) as (text: string) => string;
  const cases: [string, string][] = [
    ['2026-11-23 09:12:04.123+00', '2026-11-23T09:12:04.123Z'],
    ['2026-11-23 09:12:04.12+00', '2026-11-23T09:12:04.120Z'],
    ['2026-11-23 09:12:04.1+00', '2026-11-23T09:12:04.100Z'],
    ['2026-11-23 09:12:04+00', '2026-11-23T09:12:04.000Z'],
    // A session in another time zone: through pg's own parser.
    ['2026-11-23 03:12:04.5-06', '2026-11-23T09:12:04.500Z'],
    ['2026-11-23 14:42:04.5+05:30', '2026-11-23T09:12:04.500Z'],
  ];
  for (const [text, expected] of cases) assert.equal(parse(text), expected, text);
  // Other types keep pg's parsers.
  assert.equal((ISO_TIMESTAMPS.getTypeParser(23) as (t: string) => number)('42'), 42);
});
