// The process of the Users service: everything but its own parts comes from runService.
import { PROTO_FILES } from '@mileage/proto';
import { outboxRelayTasks, webhooksClientSpec } from '@mileage/runtime/outbox';
import { runService } from '@mileage/runtime/service';
import { LocalArchiveStore, S3ArchiveStore, type ArchiveStore } from '@mileage/runtime/storage';
import { configShape } from './config';
import { openDatabase } from './database';
import { exportTasks } from './export-job';
import { createServer } from './server';

void runService({
  name: 'users',
  defaults: { grpcPort: 50051, metricsPort: 9461 },
  protoFile: PROTO_FILES.users,
  openDatabase,
  config: configShape,
  // The Webhooks service, to which the outbox relay hands the events (none when WEBHOOKS_ADDRESS is unset).
  clients: webhooksClientSpec,
  dependencies: (context) => {
    const archives = archiveStore(context.config);
    return { ...context, ...(archives ? { archives } : {}) };
  },
  createServer,
  tasks: (deps, config) => [
    ...outboxRelayTasks(deps, config),
    // Organization exports run in the Users process, which owns the organizations and their provisioning trail.
    ...(deps.archives
      ? exportTasks(
          { knex: deps.knex, store: deps.archives, logger: deps.logger, scimBaseUrl: config.SCIM_BASE_URL },
          config.EXPORT_POLL_MS,
        )
      : []),
  ],
});

/** Where exports' archives are kept: the S3 bucket when one is named, else the local folder, else none (exports off). */
function archiveStore(config: {
  EXPORT_ARCHIVE_DIR?: string | undefined;
  EXPORT_S3_BUCKET?: string | undefined;
  EXPORT_S3_ENDPOINT?: string | undefined;
  EXPORT_S3_REGION: string;
  EXPORT_S3_FORCE_PATH_STYLE: boolean;
}): ArchiveStore | undefined {
  if (config.EXPORT_S3_BUCKET)
    return new S3ArchiveStore({
      bucket: config.EXPORT_S3_BUCKET,
      region: config.EXPORT_S3_REGION,
      forcePathStyle: config.EXPORT_S3_FORCE_PATH_STYLE,
      ...(config.EXPORT_S3_ENDPOINT ? { endpoint: config.EXPORT_S3_ENDPOINT } : {}),
    });
  return config.EXPORT_ARCHIVE_DIR ? new LocalArchiveStore(config.EXPORT_ARCHIVE_DIR) : undefined;
}
