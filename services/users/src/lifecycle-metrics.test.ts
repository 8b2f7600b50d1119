// The data lifecycle's metrics against real PostgreSQL (the runtime role) and a real directory: exports counted as
// they end and timed when they complete, the ones waiting read at scrape time, and an erasure past its date seen as
// due with its delay until its receipt is written.
import { LocalArchiveStore, type ArchiveStore } from '@mileage/runtime/storage';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { expireExports, EXPORT_CLAIM_MS, runExport, type ExportJobDeps } from './export-job';
import { ExportJobs } from './exports-repo';
import { exportMetrics, registerLifecycleGauges } from './lifecycle-metrics';
import { usersSuite } from './users-suite.fixture';

const root = mkdtempSync(path.join(tmpdir(), 'users-lifecycle-metrics-'));
const store = new LocalArchiveStore(root);
const suite = usersSuite('users_lifecycle_metrics', {}, { archives: store });
after(() => rmSync(root, { recursive: true, force: true }));

const DEMO = 1;
const metrics = new Metrics('users');

/** The values of `name` as a scrape reads them, by their labels (without the service's). */
async function scrape(name: string): Promise<Record<string, number>> {
  const { values } = await metrics.registry.getSingleMetric(name)!.get();
  return Object.fromEntries(
    values.map((sampled) => {
      const { service: _, ...own } = sampled.labels as Record<string, string>;
      // A histogram's samples name their series (_bucket, _sum, _count).
      const series = (sampled as { metricName?: string }).metricName ?? name;
      return [`${series}${JSON.stringify(own)}`, sampled.value];
    }),
  );
}

async function runNext(archives: ArchiveStore = store): Promise<void> {
  const deps: ExportJobDeps = {
    knex: suite.runtime.knex,
    store: archives,
    logger: createLogger({ service: 'users-test', level: 'silent' }),
    scimBaseUrl: 'https://mileage.example/scim/v2',
    metrics: exportMetrics(metrics),
  };
  const job = await new ExportJobs(suite.runtime.knex).claim(EXPORT_CLAIM_MS);
  assert.ok(job, 'an export was waiting');
  await runExport(deps, job);
}

test('exports: waiting ones read at each scrape; each counted by its outcome as it ends, completed ones timed', async () => {
  registerLifecycleGauges(metrics, suite.runtime.knex);
  const exportsOf = suite.organizationsIn(DEMO);
  assert.deepEqual(await scrape('organization_exports_in_progress'), {
    'organization_exports_in_progress{"status":"queued"}': 0,
    'organization_exports_in_progress{"status":"running"}': 0,
  });
  const { export: first } = await exportsOf.requestExport({ actor: 'user:AliceAdm01', requestId: 'req-1' });
  await suite.admin.knex.raw(
    `UPDATE users.organization_exports SET requested_at = now() - interval '90 seconds' WHERE id = ?`,
    [first!.id],
  );
  assert.equal(
    (await scrape('organization_exports_in_progress'))['organization_exports_in_progress{"status":"queued"}'],
    1,
  );
  const waited = (await scrape('organization_export_oldest_queued_seconds'))[
    'organization_export_oldest_queued_seconds{}'
  ]!;
  assert.ok(waited >= 90 && waited < 150, `the oldest waited ${waited} s`);

  await runNext();
  const ended = await scrape('organization_exports_total');
  assert.deepEqual(ended, { 'organization_exports_total{"outcome":"completed"}': 1 });
  const timed = await scrape('organization_export_duration_seconds');
  assert.equal(timed['organization_export_duration_seconds_count{}'], 1);
  assert.ok(timed['organization_export_duration_seconds_sum{}']! >= 90, 'timed from the request');
  assert.equal(
    (await scrape('organization_export_oldest_queued_seconds'))['organization_export_oldest_queued_seconds{}'],
    0,
  );

  // A store that refuses the archive: the export fails, and is counted so.
  await exportsOf.requestExport({ actor: 'user:AliceAdm01', requestId: 'req-2' });
  await runNext({
    ...store,
    put: async () => {
      throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    },
    get: (key, range) => store.get(key, range),
    read: (key, range, into) => store.read(key, range, into),
    size: (key) => store.size(key),
    delete: (key) => store.delete(key),
  });
  assert.equal((await scrape('organization_exports_total'))['organization_exports_total{"outcome":"failed"}'], 1);

  await suite.admin.knex.raw(
    `UPDATE users.organization_exports SET expires_at = now() - interval '1 second' WHERE id = ?`,
    [first!.id],
  );
  await expireExports({ knex: suite.runtime.knex, store, metrics: exportMetrics(metrics) });
  assert.deepEqual(await scrape('organization_exports_total'), {
    'organization_exports_total{"outcome":"completed"}': 1,
    'organization_exports_total{"outcome":"failed"}': 1,
    'organization_exports_total{"outcome":"expired"}': 1,
  });
});

test('offboardings: an erasure past its date is due, with its delay, until its receipt is written', async () => {
  registerLifecycleGauges(metrics, suite.runtime.knex);
  const { organization } = await suite.organizations.createOrganization({ name: 'Umbrella', alias: 'umbrella' });
  const due = async () => ({
    ...(await scrape('organization_erasures_due')),
    ...(await scrape('organization_erasure_overdue_seconds')),
  });
  await suite.organizations.offboardOrganization({ organizationId: organization!.id, graceDays: 30, now: false });
  assert.deepEqual(await due(), {
    'organization_erasures_due{}': 0,
    'organization_erasure_overdue_seconds{}': 0,
  });
  // Its grace period ended two hours ago, and no `erase-due` has run since.
  await suite.admin.knex.raw(
    `UPDATE users.organization_offboardings SET erase_after = now() - interval '2 hours' WHERE organization_id = ?`,
    [organization!.id],
  );
  const overdue = await due();
  assert.equal(overdue['organization_erasures_due{}'], 1);
  const seconds = overdue['organization_erasure_overdue_seconds{}']!;
  assert.ok(seconds >= 7200 && seconds < 7260, `overdue by ${seconds} s`);
  // Started but interrupted: still due.
  await suite.organizations.startErasure({ organizationId: organization!.id });
  assert.equal((await due())['organization_erasures_due{}'], 1);
  await suite.admin.knex.raw(
    `UPDATE users.organization_offboardings SET erasure_finished_at = now() WHERE organization_id = ?`,
    [organization!.id],
  );
  assert.deepEqual(await due(), {
    'organization_erasures_due{}': 0,
    'organization_erasure_overdue_seconds{}': 0,
  });
});
