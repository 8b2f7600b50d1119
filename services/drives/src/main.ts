// The process of the Drives service: everything but its own parts comes from runService.
import { PROTO_FILES } from '@mileage/proto';
import { env, outboxRelayConfigShape, outboxRelayTasks, runService, webhooksClientSpec } from '@mileage/runtime';
import { openDatabase } from './database';
import { DEFAULT_TOMBSTONE_RETENTION_DAYS, DrivesRepository } from './drives-repo';
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
  },
  // The Webhooks service, to which the outbox relay hands the events (none when WEBHOOKS_ADDRESS is unset).
  clients: webhooksClientSpec,
  dependencies: (context) => ({
    knex: context.knex,
    logger: context.logger,
    tombstoneRetentionDays: context.config.TOMBSTONE_RETENTION_DAYS,
    context,
  }),
  createServer,
  tasks: (deps, config) => {
    const repo = new DrivesRepository(deps.knex, deps.tombstoneRetentionDays);
    return [
      ...outboxRelayTasks(deps.context, config),
      {
        name: 'purge-tombstones',
        everyMs: config.TOMBSTONE_PURGE_INTERVAL_MS,
        // Safe on every replica at once: each batch deletes what is past the cutoff, whoever gets there first.
        run: async () => {
          const purged = await repo.purgeTombstones();
          if (purged.drives || purged.reports) deps.logger.info(purged, 'tombstones purged');
        },
      },
    ];
  },
});
