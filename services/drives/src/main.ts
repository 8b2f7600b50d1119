// The process of the Drives service: everything but its own parts comes from runService.
import { groupsV1, PROTO_FILES } from '@mileage/proto';
import { env } from '@mileage/runtime/config';
import { outboxRelayConfigShape, outboxRelayTasks, webhooksClientSpec } from '@mileage/runtime/outbox';
import { runService } from '@mileage/runtime/service';
import { archiveStoreOf, archiveStoreConfigShape } from '@mileage/runtime/storage';
import { z } from 'zod';
import { openDatabase } from './database';
import { DEFAULT_EXPORT_DUTY_CYCLE } from './export-part';
import { DEFAULT_TOMBSTONE_RETENTION_DAYS, purgeTombstones } from './drives-repo';
import { createServer } from './server';

void runService({
  name: 'drives',
  defaults: { grpcPort: 50053, metricsPort: 9463 },
  protoFile: PROTO_FILES.drives,
  openDatabase,
  config: {
    ...outboxRelayConfigShape,
    /** How long the tombstones of deleted drives and withdrawn reports stay in the change feed. */
    TOMBSTONE_RETENTION_DAYS: env.positiveInt(DEFAULT_TOMBSTONE_RETENTION_DAYS),
    /** How often the housekeeping purges tombstones past the retention window. */
    TOMBSTONE_PURGE_INTERVAL_MS: env.positiveInt(3_600_000),
    /** The Groups service, asked whether a group a drive is reported to is of the drive's organization. */
    GROUPS_ADDRESS: env.target('127.0.0.1:50052'),
    GRPC_DEADLINE_MS: env.positiveInt(3_000),
    // Where its part of an organization export goes (the Users service's export job assembles the archive).
    ...archiveStoreConfigShape,
    /** The share of the wall time writing that part may take (0 < x ≤ 1): the rest is left to other organizations. */
    EXPORT_DUTY_CYCLE: z.coerce.number().gt(0).max(1).default(DEFAULT_EXPORT_DUTY_CYCLE),
  },
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
