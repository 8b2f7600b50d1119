// The process of the Users service: everything but its own parts comes from runService.
import { PROTO_FILES } from '@mileage/proto';
import { outboxRelayTasks, webhooksClientSpec } from '@mileage/runtime/outbox';
import { runService } from '@mileage/runtime/service';
import { archiveStoreOf } from '@mileage/runtime/storage';
import { configShape } from './config';
import { openDatabase } from './database';
import {
  drivesExportOwner,
  exportOwnerClients,
  exportTasks,
  groupsExportOwner,
  webhooksExportOwner,
} from './export-job';
import { exportMetrics, registerLifecycleGauges } from './lifecycle-metrics';
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
    // The Groups, Drives and Webhooks services write their parts of each organization export.
    ...exportOwnerClients(config),
  }),
  dependencies: ({ clients: { drives, groups, webhooksExports, ...relayClients }, ...context }) => {
    const archives = archiveStoreOf(context.config);
    // Exports waiting and erasures overdue, read at each scrape (exports on or off: offboarding is always there).
    registerLifecycleGauges(context.metrics, context.knex);
    return {
      ...context,
      ...(archives ? { archives } : {}),
      erasureBackupsHoldDays: context.config.ERASURE_BACKUPS_HOLD_DAYS,
      // The outbox relay gets the Webhooks client only; the export job the Drives one.
      relayContext: { ...context, clients: relayClients },
      drives,
      groups,
      webhooksExports,
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
            metrics: exportMetrics(deps.metrics),
            owners: [
              ...(deps.groups ? [groupsExportOwner(deps.groups)] : []),
              ...(deps.drives ? [drivesExportOwner(deps.drives)] : []),
              ...(deps.webhooksExports ? [webhooksExportOwner(deps.webhooksExports)] : []),
            ],
          },
          config.EXPORT_POLL_MS,
        )
      : []),
  ],
});
