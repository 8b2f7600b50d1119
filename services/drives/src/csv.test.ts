import { stringify } from 'csv-stringify/sync';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { csvLine } from './csv';

test('a CSV record is written as csv-stringify writes it: quoted only when a field holds a comma, quote or break', () => {
  const fields = [
    ['plain', 12.5, '', 0, 'with space'],
    ['a,b', 'say "hi"', 'two\nlines', 'carriage\rreturn', '"', ',', '\r\n'],
    ['=SUM(A1)', '-3', 'ünïcödé', "it's", 'tab\there', '  padded  '],
    [-1.25, 1e21, 'x | y'],
  ];
  for (const row of fields) assert.equal(csvLine(row), stringify([row]));
});
