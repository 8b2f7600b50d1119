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
