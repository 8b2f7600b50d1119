// Every RPC declares its rules in its .proto (a new method cannot ship without deciding who may call it, whom it acts
// for, its organization and whether it is retried), and the generated rules name nothing else.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { METHOD_RULES } from '@mileage/proto';
import { generatedMethods } from './generated-methods.fixture';
import { isRetried } from './retry';

test('every method of the generated services declares its rules, and every declared method is such a method', () => {
  const methods = generatedMethods();
  for (const method of methods)
    assert.equal(method.requestStream || method.responseStream, false, `${method.path} is not unary`);
  assert.deepEqual(Object.keys(METHOD_RULES).sort(), methods.map((m) => m.path).sort());
});

test("an end-user binding names callers that may call its method, and a field of the method's request", () => {
  for (const [path, rules] of Object.entries(METHOD_RULES))
    for (const component of rules.endUser?.from ?? [])
      assert.ok(rules.callers.includes(component), `${component} may call ${path}`);
});

// Written out so that a change of what is retried is a decision seen in review, not a side effect.
const READS = [
  '/mileage.drives.v1.DrivesService/ListUserDrives',
  '/mileage.drives.v1.DrivesService/ListReportedDrives',
  '/mileage.drives.v1.DrivesService/ExportUserDrives',
  '/mileage.groups.v1.GroupsService/GetGroup',
  '/mileage.groups.v1.GroupsService/ListAdministeredGroups',
  '/mileage.groups.v1.GroupsService/CheckGroupAdmin',
  '/mileage.groups.v1.GroupsService/ListGroups',
  '/mileage.groups.v1.GroupsService/ListProvisioningEvents',
  '/mileage.users.v1.UsersService/GetUser',
  '/mileage.users.v1.UsersService/BatchGetUsers',
  '/mileage.users.v1.UsersService/ListUsers',
  '/mileage.users.v1.UsersService/BatchFindUsersByUserName',
  '/mileage.users.v1.UsersService/ListProvisioningEvents',
  '/mileage.users.v1.OrganizationsService/GetOrganization',
  '/mileage.users.v1.OrganizationsService/ListScimTokens',
  '/mileage.users.v1.OrganizationsService/ResolveScimToken',
  '/mileage.users.v1.OrganizationsService/ListExports',
  '/mileage.users.v1.OrganizationsService/GetExport',
  '/mileage.users.v1.OrganizationsService/ReadExportArchive',
  '/mileage.webhooks.v1.WebhooksService/ListSubscriptions',
  '/mileage.webhooks.v1.WebhooksService/ListDeliveries',
];

// The operator's offboarding calls: each may run twice with the same outcome (an erasure resumes with what is left, a
// pause is a state, starting an erasure marks it once).
const OFFBOARDING_CALLS = [
  '/mileage.users.v1.OrganizationsService/GetOffboarding',
  '/mileage.users.v1.OrganizationsService/ListDueErasures',
  '/mileage.users.v1.OrganizationsService/StartErasure',
  '/mileage.users.v1.OrganizationsService/EraseOrganization',
  '/mileage.users.v1.OrganizationsService/FinishErasure',
  '/mileage.groups.v1.GroupsService/EraseOrganization',
  '/mileage.drives.v1.DrivesService/EraseOrganization',
  '/mileage.webhooks.v1.WebhooksService/EraseOrganization',
  '/mileage.webhooks.v1.WebhooksService/SetDeliveriesPaused',
];

test('the methods sent again on UNAVAILABLE are the reads and the idempotent offboarding calls: no other write, nothing with a one-time attestation', () => {
  const retried = Object.entries(METHOD_RULES)
    .filter(([, rules]) => isRetried(rules))
    .map(([path]) => path);
  assert.deepEqual(retried.sort(), [...READS, ...OFFBOARDING_CALLS].sort());
});
