// The process of the Groups service: everything but its own parts comes from runService.
import { PROTO_FILES } from '@mileage/proto';
import { runService } from '@mileage/runtime/service';
import { archiveStoreConfigShape, archiveStoreOf } from '@mileage/runtime/storage';
import { z } from 'zod';
import { openDatabase } from './database';
import { createServer } from './server';

void runService({
  name: 'groups',
  defaults: { grpcPort: 50052, metricsPort: 9462 },
  protoFile: PROTO_FILES.groups,
  openDatabase,
  config: {
    // Where its part of an organization export goes (the Users service's export job assembles the archive).
    ...archiveStoreConfigShape,
    /** Public URL of /scim/v2 as clients reach it: `meta.location` and the members' `$ref` in an export. */
    SCIM_BASE_URL: z
      .url()
      .default('http://127.0.0.1:8080/scim/v2')
      .transform((u) => u.replace(/\/$/, '')),
  },
  dependencies: (context) => {
    const archives = archiveStoreOf(context.config);
    return { knex: context.knex, scimBaseUrl: context.config.SCIM_BASE_URL, ...(archives ? { archives } : {}) };
  },
  createServer,
});
