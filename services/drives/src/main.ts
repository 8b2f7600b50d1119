// The process of the Drives service: everything but its own parts comes from runService.
import { groupsV1, PROTO_FILES } from '@mileage/proto';
import { outboxRelayTasks, webhooksClientSpec } from '@mileage/runtime/outbox';
import { runService } from '@mileage/runtime/service';
import { archiveStoreOf } from '@mileage/runtime/storage';
import { openDatabase } from './database';
import { configShape } from './config';
import { purgeTombstones } from './drives-repo';
import { exportWorkerCounter } from './export-handlers';
import { createServer } from './server';

void runService({
  name: 'drives',
  defaults: { grpcPort: 50053, metricsPort: 9463 },
  protoFile: PROTO_FILES.drives,
  openDatabase,
  config: configShape,
  clients: (config) => ({
    groups: {
      client: groupsV1.GroupsServiceClient,
      address: config.GROUPS_ADDRESS,
      deadlineMs: config.GRPC_DEADLINE_MS,
    },
    // The Webhooks service, to which the outbox relay hands the events (none when WEBHOOKS_ADDRESS is unset).
    ...webhooksClientSpec(config),
  }),
  dependencies: ({ clients: { groups, ...relayClients }, ...context }) => ({
    knex: context.knex,
    groups,
    logger: context.logger,
    countExportWorker: exportWorkerCounter(context.metrics),
    tombstoneRetentionDays: context.config.TOMBSTONE_RETENTION_DAYS,
    ...optional('archives', archiveStoreOf(context.config)),
    exportDutyCycle: context.config.EXPORT_DUTY_CYCLE,
    relayContext: { ...context, clients: relayClients },
  }),
  createServer,
  tasks: (deps, config) => {
    return [
      ...outboxRelayTasks(deps.relayContext, config),
      {
        name: 'purge-tombstones',
        everyMs: config.TOMBSTONE_PURGE_INTERVAL_MS,
        // Safe on every replica at once: each batch deletes what is past the cutoff, whoever gets there first.
        run: async () => {
          const purged = await purgeTombstones(deps.knex, deps.tombstoneRetentionDays);
          if (purged.drives || purged.reports) deps.logger.info(purged, 'tombstones purged');
        },
      },
    ];
  },
});

/** `{ [key]: value }`, or nothing when there is no value (exactOptionalPropertyTypes). */
function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}
