// Which calls a gRPC client sends again on UNAVAILABLE: the reads, and nothing that writes or carries a one-time
// attestation (SCIM's HandleRequest and HandleRequests). The list is written out so that a new method is decided on,
// not retried (or not) by the accident of its name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generatedMethods } from './generated-methods.fixture';
import { RETRIED_METHOD } from './grpc-client';

const READS = [
  '/mileage.drives.v1.DrivesService/ListUserDrives',
  '/mileage.drives.v1.DrivesService/ListReportedDrives',
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
  '/mileage.webhooks.v1.WebhooksService/ListSubscriptions',
  '/mileage.webhooks.v1.WebhooksService/ListDeliveries',
];

test('the methods sent again on UNAVAILABLE are exactly the reads', () => {
  const retried = generatedMethods()
    .map((m) => m.path)
    .filter((path) => RETRIED_METHOD.test(path.split('/')[2]!));
  assert.deepEqual(retried.sort(), [...READS].sort());
});
