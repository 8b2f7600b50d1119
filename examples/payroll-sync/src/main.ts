#!/usr/bin/env node
// payroll-sync: `export` (one idempotent run, e.g. nightly from cron) or `receive` (a webhook receiver that also syncs
// at start and every PAYROLL_SYNC_INTERVAL_SECONDS). Configuration: environment variables (README, src/config.ts).
import { once } from 'node:events';
import { clientFor, csvPath, ConfigError, loadConfig, statePath, type Config } from './config';
import { runExport } from './export';
import { createReceiver } from './receiver';
import { PayrollStore } from './store';

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(command: string | undefined, config: Config): Promise<void> {
  const store = new PayrollStore(csvPath(config), statePath(config), config.MILEAGE_GROUP_ID);
  const client = clientFor(config);
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
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
  if (command === 'receive') {
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
    return;
  }
  throw new ConfigError([`usage: main.js export | receive (got ${command ?? 'nothing'})`]);
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
