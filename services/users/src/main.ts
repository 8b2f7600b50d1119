// The process of the Users service: everything but its own parts comes from runService.
import { drivesV1, groupsV1, PROTO_FILES, type webhooksV1 } from '@mileage/proto';
import type { PromiseClient } from '@mileage/runtime/grpc';
import { outboxRelayTasks, webhooksClientSpec } from '@mileage/runtime/outbox';
import { runService } from '@mileage/runtime/service';
import { archiveStoreOf } from '@mileage/runtime/storage';
import { configShape } from './config';
import { openDatabase } from './database';
import { drivesExportOwner, exportTasks, groupsExportOwner, webhooksExportOwner } from './export-job';
import { createServer } from './server';

void runService({
  name: 'users',
  defaults: { grpcPort: 50051, metricsPort: 9461 },
  protoFile: PROTO_FILES.users,
  openDatabase,
  config: configShape,
  // The Webhooks service, to which the outbox relay hands the events (none when WEBHOOKS_ADDRESS is unset).
  clients: (config) => ({
    ...webhooksClientSpec(config),
    // The Groups and Drives services write their parts of each organization export.
    ...(config.GROUPS_ADDRESS
      ? { groups: { client: groupsV1.GroupsServiceClient, address: config.GROUPS_ADDRESS, deadlineMs: 3_000 } }
      : {}),
    ...(config.DRIVES_ADDRESS
      ? { drives: { client: drivesV1.DrivesServiceClient, address: config.DRIVES_ADDRESS, deadlineMs: 3_000 } }
      : {}),
  }),
  dependencies: ({ clients: { drives, groups, ...relayClients }, ...context }) => {
    const archives = archiveStoreOf(context.config);
    return {
      ...context,
      ...(archives ? { archives } : {}),
      erasureBackupsHoldDays: context.config.ERASURE_BACKUPS_HOLD_DAYS,
      // The outbox relay gets the Webhooks client only; the export job the Drives one.
      relayContext: { ...context, clients: relayClients },
      drives,
      groups,
      // webhooksClientSpec's type is a union with `{}` (no address, no client).
      webhooks: (relayClients as { webhooks?: PromiseClient<webhooksV1.WebhooksServiceClient> }).webhooks,
    };
  },
  createServer,
  tasks: (deps, config) => [
    ...outboxRelayTasks(deps.relayContext, config),
    // Organization exports run in the Users process, which owns the organizations and their provisioning trail.
    ...(deps.archives
      ? exportTasks(
          {
            knex: deps.knex,
            store: deps.archives,
            logger: deps.logger,
            scimBaseUrl: config.SCIM_BASE_URL,
            owners: [
              ...(deps.groups ? [groupsExportOwner(deps.groups)] : []),
              ...(deps.drives ? [drivesExportOwner(deps.drives)] : []),
              ...(deps.webhooks ? [webhooksExportOwner(deps.webhooks)] : []),
            ],
          },
          config.EXPORT_POLL_MS,
        )
      : []),
  ],
});
