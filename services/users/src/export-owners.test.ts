// An owner's part of an organization export takes longer than a connection lives: the Users process's client for it
// (exportOwnerClients, as main.ts declares it) sees the call through the server's GOAWAY at the connection's age, and
// the export completes. Real gRPC (a Drives server whose part takes past its connections' age), PostgreSQL as the
// runtime role, a real directory as the store.
import { drivesV1, PROTO_FILES, usersV1 } from '@mileage/proto';
import {
  createGrpcClient,
  KEEPALIVE_TIME_MS,
  KEEPALIVE_TIMEOUT_MS,
  startGrpcServer,
  type GrpcServerHandle,
} from '@mileage/runtime/grpc';
import { LocalArchiveStore, writeExportPart } from '@mileage/runtime/storage';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { drivesExportOwner, EXPORT_CLAIM_MS, exportOwnerClients, runExport } from './export-job';
import { ExportJobs } from './exports-repo';
import { usersSuite } from './users-suite.fixture';

const root = mkdtempSync(path.join(tmpdir(), 'users-export-owners-'));
const store = new LocalArchiveStore(root);
const suite = usersSuite('users_export_owners', {}, { archives: store });
after(() => rmSync(root, { recursive: true, force: true }));

const DEMO = 1;
/** The Drives server's connections close after this (±10 %), with a grace well beyond the part's call. */
const AGE_MS = 300;
/** How long the Drives part takes: past the GOAWAY and the keepalive ping that would follow it. */
const PART_MS = AGE_MS * 1.1 + KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS + 500;

let drives: GrpcServerHandle;

before(async () => {
  const notInThisTest = async () => {
    throw new Error('not called by the export');
  };
  drives = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [
      {
        definition: drivesV1.DrivesServiceService,
        handlers: {
          ...Object.fromEntries(Object.keys(drivesV1.DrivesServiceService).map((key) => [key, notInThisTest])),
          // A part that takes PART_MS to write, as a large organization's reported drives take minutes.
          writeExportPart: async (request: drivesV1.WriteExportPartRequest) => {
            await delay(PART_MS);
            async function* oneDrive() {
              yield '{"id":"1"}\n';
            }
            const file = await writeExportPart(store, request.exportId, 'reported_drives.jsonl', oneDrive());
            return { files: [{ ...file, gzipBytes: 0 }] };
          },
        } as never,
      },
    ],
    protoFiles: [PROTO_FILES.drives],
    logger: createLogger({ service: 'drives-stub', level: 'silent' }),
    metrics: new Metrics('drives_stub'),
    maxConnectionAgeMs: AGE_MS,
    maxConnectionAgeGraceMs: 10 * PART_MS,
  });
});

after(() => drives.shutdown(100));

test("the Drives part outlives its connection's age and the export completes", async () => {
  const spec = exportOwnerClients({ DRIVES_ADDRESS: `127.0.0.1:${drives.port}` }).drives!;
  // As runService makes a declared client.
  const client = createGrpcClient(spec.client, spec.address, {
    defaultDeadlineMs: spec.deadlineMs,
    ...(spec.longCalls && { longCalls: true }),
  });
  try {
    const { export: queued } = await suite
      .organizationsIn(DEMO)
      .requestExport({ actor: 'user:AliceAdm01', requestId: 'req-export' });
    const job = await new ExportJobs(suite.runtime.knex).claim(EXPORT_CLAIM_MS);
    assert.equal(job?.id, queued!.id);
    await runExport(
      {
        knex: suite.runtime.knex,
        store,
        logger: createLogger({ service: 'users-test', level: 'silent' }),
        scimBaseUrl: 'https://mileage.example/scim/v2',
        owners: [drivesExportOwner(client)],
      },
      job!,
    );
    const { export: done } = await suite.organizationsIn(DEMO).getExport({ id: queued!.id });
    assert.equal(done!.status, usersV1.ExportStatus.EXPORT_STATUS_COMPLETED, done!.failureReason);
  } finally {
    client.close();
  }
});
