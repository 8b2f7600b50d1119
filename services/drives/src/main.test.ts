/**
 * The service as it runs in production (main.js, its own process) with PostgreSQL going away and coming back:
 * calls fail fast with UNAVAILABLE, the service reports NOT_SERVING for its gRPC service (callers fail fast too)
 * but the server as a whole (what Kubernetes probes) stays SERVING, and it recovers by itself.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { drivesV1 } from '@mileage/proto';
import { createGrpcClient, decodeServiceError, HealthClient } from '@mileage/runtime/grpc';
import { freePort } from '@mileage/runtime/config';
import { createTestDatabase, startFaultProxy, testServerUrl, waitFor } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';

const SERVICE = 'mileage.drives.v1.DrivesService';

test(
  'PostgreSQL down: calls answer UNAVAILABLE at once, the process stays ready and recovers',
  { timeout: 60_000 },
  async (t) => {
    const testDb = await createTestDatabase('drives_main');
    const server = new URL(testServerUrl());
    const proxy = await startFaultProxy({ host: server.hostname, port: Number(server.port) });
    const url = new URL(testDb.url);
    url.host = proxy.address;
    const [grpcPort, metricsPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, [path.join(__dirname, 'main.js')], {
      env: {
        PATH: process.env.PATH,
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
        DATABASE_URL: url.toString(),
        MIGRATION_DATABASE_URL: url.toString(),
        MIGRATE_ON_START: 'true',
        GRPC_PLAINTEXT: 'true',
        GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
        METRICS_PORT: String(metricsPort),
        GROUPS_ADDRESS: `127.0.0.1:${await freePort()}`,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const health = new HealthClient(`127.0.0.1:${grpcPort}`);
    const client = createGrpcClient(drivesV1.DrivesServiceClient, `127.0.0.1:${grpcPort}`, {
      defaultDeadlineMs: 3_000,
    });
    t.after(async () => {
      child.kill('SIGTERM');
      client.close();
      health.close();
      await proxy.close();
      await testDb.drop();
    });
    const list = () =>
      client.listUserDrives(
        {
          userId: 'AliceAdm01',
          limit: 10,
          classification: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_ALL,
          sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
        },
        { organizationId: 1 },
      );
    const report = async () =>
      (await (await fetch(`http://127.0.0.1:${metricsPort}/healthz/dependencies`)).json()) as {
        dependencies: { postgres: { up: boolean } };
      };

    await waitFor(() => health.check(SERVICE, 500), { timeoutMs: 20_000, what: 'service serving' });
    assert.deepEqual((await list()).drives, []);

    await proxy.stop();
    await waitFor(async () => !(await health.check(SERVICE, 500)), { what: 'service NOT_SERVING' });
    assert.equal(await health.check('', 500), true, 'the server (the Kubernetes probe) stays SERVING');
    assert.equal((await report()).dependencies.postgres.up, false);
    const err = await list().then(
      () => assert.fail('expected UNAVAILABLE'),
      (e: unknown) => decodeServiceError(e as ServiceError),
    );
    assert.equal(err.code, status.UNAVAILABLE);
    assert.equal(err.reason, 'DATABASE_UNAVAILABLE');
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    assert.match(metrics, /^dependency_up\{dependency="postgres",service="drives"\} 0$/m);

    await proxy.resume();
    await waitFor(() => health.check(SERVICE, 500), { timeoutMs: 20_000, what: 'service serving again' });
    assert.deepEqual((await list()).drives, []);
    assert.equal((await report()).dependencies.postgres.up, true);
  },
);

test(
  'the process purges tombstones past TOMBSTONE_RETENTION_DAYS in its housekeeping',
  { timeout: 60_000 },
  async (t) => {
    const testDb = await createTestDatabase('drives_purge');
    const [grpcPort, metricsPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, [path.join(__dirname, 'main.js')], {
      env: {
        PATH: process.env.PATH,
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
        DATABASE_URL: testDb.url,
        MIGRATION_DATABASE_URL: testDb.url,
        MIGRATE_ON_START: 'true',
        GRPC_PLAINTEXT: 'true',
        GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
        METRICS_PORT: String(metricsPort),
        GROUPS_ADDRESS: `127.0.0.1:${await freePort()}`,
        TOMBSTONE_RETENTION_DAYS: '30',
        TOMBSTONE_PURGE_INTERVAL_MS: '100',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const health = new HealthClient(`127.0.0.1:${grpcPort}`);
    const db = new pg.Client({ connectionString: testDb.url });
    t.after(async () => {
      child.kill('SIGTERM');
      health.close();
      await db.end();
      await testDb.drop();
    });
    await waitFor(() => health.check(SERVICE, 500), { timeoutMs: 20_000, what: 'service serving (migrated)' });
    await db.connect();
    const tombstone = (id: number, daysAgo: number, organization: number) =>
      db.query(
        `INSERT INTO drives.drive_tombstones (drive_id, user_id, modified_at, drive, organization_id)
       VALUES ($1, 'PurgeUser1', now() - make_interval(days => $2), '{}', $3)`,
        [id, daysAgo, organization],
      );
    // The housekeeping purges across organizations.
    await tombstone(1, 31, 2);
    await tombstone(2, 29, 1);
    await waitFor(
      async () =>
        (await db.query('SELECT drive_id FROM drives.drive_tombstones ORDER BY drive_id')).rows
          .map((r) => r.drive_id)
          .join() === '2',
      { what: 'the 31-day-old tombstone purged, the 29-day-old one kept' },
    );
    const { rows } = await db.query<{ days: number }>(
      `SELECT round(extract(epoch FROM now() - purged_before) / 86400) AS days FROM drives.tombstone_purges`,
    );
    assert.equal(Number(rows[0]!.days), 30);
  },
);
