import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isOrganizationAlias } from './ids';
import { isOrganizationId } from '../grpc/organization-metadata';

test('an alias has 1..63 of [a-z0-9-] and at least one letter', () => {
  for (const alias of [
    'demo',
    'globex',
    'a',
    'z',
    'acme-2',
    '2-acme',
    '123a',
    '-x-',
    'a'.repeat(63),
    `${'9'.repeat(62)}q`,
  ])
    assert.equal(isOrganizationAlias(alias), true, alias);
  for (const value of ['', '2', '42', '007', '-', '---', '1-2', 'Demo', 'a_b', 'a b', 'é', 'a'.repeat(64), 7, null])
    assert.equal(isOrganizationAlias(value), false, String(value));
});

test('no string is both an alias and an organization id', () => {
  for (const value of ['1', '2', '10', '999999', 'demo', 'a1', '1a', '0', '-1'])
    assert.ok(!(isOrganizationAlias(value) && isOrganizationId(value)), value);
});
