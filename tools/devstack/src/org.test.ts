import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseOrgCommand } from './org';

test('npm run org: create takes an alias and a name of several words; admin takes a user id and on or off', () => {
  assert.deepEqual(parseOrgCommand(['create', 'initech', 'Initech', 'Ltd']), {
    command: 'create',
    alias: 'initech',
    name: 'Initech Ltd',
  });
  assert.deepEqual(parseOrgCommand(['admin', 'FrankDrv01', 'on']), {
    command: 'admin',
    userId: 'FrankDrv01',
    organizationAdmin: true,
  });
  assert.deepEqual(parseOrgCommand(['admin', 'FrankDrv01', 'off']), {
    command: 'admin',
    userId: 'FrankDrv01',
    organizationAdmin: false,
  });
  for (const wrong of [[], ['create', 'initech'], ['admin', 'FrankDrv01'], ['admin', 'FrankDrv01', 'yes'], ['drop']])
    assert.equal(parseOrgCommand(wrong), undefined, wrong.join(' '));
});

test('npm run org: offboard takes an organization and --grace-days N, --now or --cancel; offboarding and erase-due', () => {
  assert.deepEqual(parseOrgCommand(['offboard', 'acme']), { command: 'offboard', organization: 'acme', now: false });
  assert.deepEqual(parseOrgCommand(['offboard', '3', '--grace-days', '45']), {
    command: 'offboard',
    organization: '3',
    graceDays: 45,
    now: false,
  });
  assert.deepEqual(parseOrgCommand(['offboard', 'acme', '--now']), {
    command: 'offboard',
    organization: 'acme',
    now: true,
  });
  assert.deepEqual(parseOrgCommand(['offboard', 'acme', '--cancel']), { command: 'cancel', organization: 'acme' });
  assert.deepEqual(parseOrgCommand(['offboarding', 'acme']), { command: 'offboarding', organization: 'acme' });
  assert.deepEqual(parseOrgCommand(['erase-due']), { command: 'erase-due' });
  for (const wrong of [
    ['offboard'],
    ['offboard', '--now'],
    ['offboard', 'acme', '--grace-days'],
    ['offboard', 'acme', '--grace-days', 'ten'],
    ['offboard', 'acme', '--now', '--cancel'],
    ['offboarding'],
    ['erase-due', 'acme'],
  ])
    assert.equal(parseOrgCommand(wrong), undefined, wrong.join(' '));
});
