// The Drives service over real gRPC for tests, with a real Groups service (a drive is reported only to a group of its
// organization, which the Drives service asks the Groups service): groups 1..GROUPS_OF_ORGANIZATION_1 of
// organization 1, the next ten of organization 2.
import { openDatabase } from '@mileage/groups';
import { startGroupsService } from '@mileage/groups/testing';
import { drivesV1, type groupsV1, PROTO_FILES } from '@mileage/proto';
import type { Knex } from '@mileage/runtime/database';
import type { PromiseClient } from '@mileage/runtime/grpc';
import { createMigratedDatabase, startTestService } from '@mileage/runtime/testing';
import { createServer } from './server';

export const GROUPS_OF_ORGANIZATION_1 = 100;
/** A group of organization 2. */
export const GLOBEX_GROUP = GROUPS_OF_ORGANIZATION_1 + 1;

export interface TestGroups {
  client: PromiseClient<groupsV1.GroupsServiceClient>;
  close(): Promise<void>;
}

export async function startTestGroups(): Promise<TestGroups> {
  const database = await createMigratedDatabase('drives_groups', (url) => openDatabase({ url }));
  await database.db.knex.raw(
    `INSERT INTO teams (id, display_name, organization_id)
     SELECT g, 'Group ' || g, CASE WHEN g <= ? THEN 1 ELSE 2 END FROM generate_series(1, ?) g`,
    [GROUPS_OF_ORGANIZATION_1, GROUPS_OF_ORGANIZATION_1 + 10],
  );
  const service = await startGroupsService(database.db.knex);
  return {
    client: service.client,
    async close() {
      await service.close();
      await database.close();
    },
  };
}

/** The Drives service over `knex` on a free loopback port; its client sends no organization unless told. */
export function startDrivesService(knex: Knex, groups: TestGroups, tombstoneRetentionDays?: number) {
  return startTestService({
    service: 'drives',
    implementation: createServer({
      knex,
      groups: groups.client,
      ...(tombstoneRetentionDays ? { tombstoneRetentionDays } : {}),
    }),
    protoFile: PROTO_FILES.drives,
    Client: drivesV1.DrivesServiceClient,
    deadlineMs: 10_000,
  });
}
