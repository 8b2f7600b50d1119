// The Groups service over real gRPC for tests, its own and its callers' (import '@mileage/groups/testing').
import { groupsV1, PROTO_FILES } from '@mileage/proto';
import type { Knex } from '@mileage/runtime/database';
import { startTestService } from '@mileage/runtime/testing';
import type { GroupsServerDeps } from './organization-context';
import { createServer } from './server';

/**
 * The Groups service over `knex` on a free loopback port (with `more` of its dependencies, e.g. an archive store);
 * its client sends no organization unless told.
 */
export function startGroupsService(knex: Knex, more: Omit<GroupsServerDeps, 'knex'> = {}) {
  return startTestService({
    service: 'groups',
    implementation: createServer({ knex, ...more }),
    protoFile: PROTO_FILES.groups,
    Client: groupsV1.GroupsServiceClient,
    deadlineMs: 5_000,
  });
}
