#!/usr/bin/env node
// payroll-sync: `export` (one idempotent run, e.g. nightly from cron), `receive` (a webhook receiver that also syncs
// at start and every PAYROLL_SYNC_INTERVAL_SECONDS), or `organization-export` (the whole organization's archive, for
// an organization admin: CONTRACT §8). Configuration: environment variables (docs/client.md, src/config.ts).
import { once } from 'node:events';
import type { Export } from '@mileage/client';
import {
  archivePath,
  clientFor,
  csvPath,
  ConfigError,
  loadConfig,
  ORGANIZATION_EXPORT_SCOPE,
  statePath,
  tokenSource,
  type Config,
} from './config';
import { runExport } from './export';
import { runOrganizationExport } from './organization-export';
import { createReceiver } from './receiver';
import { PayrollStore } from './store';

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(command: string | undefined, config: Config): Promise<void> {
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
  if (command === 'organization-export') return organizationExport(config, stop.signal);
  if (command !== 'export' && command !== 'receive')
    throw new ConfigError([`usage: main.js export | receive | organization-export (got ${command ?? 'nothing'})`]);
  if (!config.MILEAGE_GROUP_ID) throw new ConfigError([`MILEAGE_GROUP_ID: required by ${command} (unset)`]);
  const store = new PayrollStore(csvPath(config), statePath(config), config.MILEAGE_GROUP_ID);
  const client = clientFor(config);
  if (command === 'export') {
    const r = await runExport(client, store, {
      signal: stop.signal,
      onRetry: (i) => say(`the platform answered ${i.status}: retrying in ${i.delayMs} ms`),
    });
    say(
      `${r.full ? 'full' : 'incremental'} sync of group ${config.MILEAGE_GROUP_ID}: ${r.upserts} new or changed, ` +
        `${r.deletes} removed; ${r.rows} rows in ${store.csvFile} (${r.csvChanged ? 'rewritten' : 'unchanged'}); ` +
        `watermark ${r.watermark ?? 'none'}`,
    );
    return;
  }
  // receive
  if (!config.WEBHOOK_SECRET) throw new ConfigError(['WEBHOOK_SECRET: required by receive (unset)']);
  const receiver = createReceiver({ secret: config.WEBHOOK_SECRET, client, store, log: say });
  receiver.server.listen(config.RECEIVER_PORT, config.RECEIVER_HOST);
  await once(receiver.server, 'listening');
  const address = receiver.server.address();
  say(
    `receiving webhooks on http://${config.RECEIVER_HOST}:${typeof address === 'object' ? address?.port : ''}/webhooks`,
  );
  const tick = () => receiver.sync().catch((err: Error) => say(`sync failed: ${err.message}`));
  void tick();
  const timer = setInterval(tick, config.PAYROLL_SYNC_INTERVAL_SECONDS * 1000);
  await once(stop.signal, 'abort');
  clearInterval(timer);
  receiver.server.close();
  await receiver.idle();
  say('stopped');
}

/** The organization's archive into PAYROLL_ARCHIVE, its progress as it goes, and what the checked archive holds. */
async function organizationExport(config: Config, signal: AbortSignal): Promise<void> {
  const token = tokenSource(config, ORGANIZATION_EXPORT_SCOPE);
  let seen = '';
  const onProgress = (e: Export) => {
    const phase = e.progress.phase && e.progress.phase !== e.status ? `${e.progress.phase}, ` : '';
    const so = e.status === 'completed' ? '' : ` (${phase}${e.progress.rows} rows so far)`;
    const line = `export ${e.id}: ${e.status}${so}`;
    if (line !== seen) say((seen = line));
  };

  let shownPercent = -1;
  const onBytes = (received: number, total: number | undefined) => {
    const percent = total ? Math.floor((received / total) * 4) * 25 : -1;
    if (percent > shownPercent) say(`downloaded ${received} of ${total} bytes (${(shownPercent = percent)} %)`);
  };
  const r = await runOrganizationExport(clientFor(config, token), archivePath(config), {
    baseUrl: config.MILEAGE_API_URL,
    token,
    signal,
    onProgress,
    onBytes,
  });
  if (r.resumed) say(`continued the download of export ${r.id} an earlier run left unfinished`);
  if (r.alreadyRunning) say(`export ${r.id} was already under way: this run took it rather than request another`);
  const { organization, as_of } = r.manifest;
  say(`organization ${organization.id} (${organization.name}) as of ${as_of}: ${r.file}`);
  say(`  ${r.sizeBytes} bytes, SHA-256 ${r.sha256}`);
  for (const f of r.files) say(`  ${f.name}: ${f.rows} rows, ${f.bytes} bytes, SHA-256 matches the manifest`);
  say(`${r.files.length} files, ${r.files.reduce((sum, f) => sum + f.rows, 0)} rows: every file matches the manifest`);
}

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(78);
}
main(process.argv[2], config).catch((err: Error) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : `payroll-sync: ${err.message}`}\n`);
  process.exit(err instanceof ConfigError ? 78 : 1);
});
