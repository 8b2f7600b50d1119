// `npm run bench:webhooks`: delivery throughput and lag of a burst of events. Drives' outbox rows are committed as fast
// as possible (transactions of 100, as a busy Drives service would), the real relay hands them to the real Webhooks
// service over gRPC, and its delivery workers (two replicas by default, in this process) sign and POST them to a
// receiver on loopback. Lag: from each event's commit (occurred_at) to its arrival at the receiver.
import { openDatabase as openDrivesDatabase } from '@mileage/drives';
import { createServer as createGroupsServer, openDatabase as openGroupsDatabase } from '@mileage/groups';
import { groupsV1, webhooksV1 } from '@mileage/proto';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import { inOrganization } from '@mileage/runtime/database';
import { OutboxRelay, recordEvent, toWebhookEvent } from '@mileage/runtime/outbox';
import { runEvery } from '@mileage/runtime/service';
import {
  ANY_PORT,
  createServer as createWebhooksServer,
  defaultDeliverySchedule,
  deliveryPoll,
  DeliveryWorker,
  openDatabase as openWebhooksDatabase,
  SecretBox,
  systemResolver,
  WebhooksRepository,
  type TargetPolicy,
} from '@mileage/webhooks';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { serveInProcess, withBenchPostgres } from './sequential';
import { parseFlags } from './cli';

const values = parseFlags('npm run bench:webhooks --', {
  events: { type: 'string', default: '10000' },
  workers: { type: 'string', default: '2' },
  concurrency: { type: 'string', default: '32' },
  /** CI's check that the bench runs: a few hundred events. */
  smoke: { type: 'boolean', default: false },
});
if (values.smoke) values.events = '300';
const events = Number(values.events);
const logger = createLogger({ service: 'webhooks-bench', level: 'silent' });

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function main(): Promise<void> {
  await withBenchPostgres('webhooks', async (url) => {
    const drivesDb = openDrivesDatabase({ url, poolMax: 10 });
    const groupsDb = openGroupsDatabase({ url, poolMax: 2 });
    const webhooksDb = openWebhooksDatabase({ url, poolMax: 10 });
    for (const db of [drivesDb, groupsDb, webhooksDb]) await db.migrate();

    const groupsServed = await serveInProcess(
      'groups',
      createGroupsServer({ knex: groupsDb.knex }),
      groupsV1.GroupsServiceClient,
      5_000,
    );
    const groups = groupsServed.client;
    const policy: TargetPolicy = { mode: 'development', allow: new Set(['loopback']), ports: ANY_PORT };
    const repo = new WebhooksRepository(webhooksDb.knex);
    const secrets = new SecretBox('bench-key-bench-key-bench-key-bench-key');
    const workers = Array.from(
      { length: Number(values.workers) },
      () =>
        new DeliveryWorker({
          repo,
          secrets,
          logger,
          metrics: new Metrics('webhooks'),
          send: { policy, resolver: systemResolver, connectTimeoutMs: 5_000, timeoutMs: 15_000 },
          concurrency: Number(values.concurrency),
          // The bench's one receiver may take every slot: it measures the worker, not the per-subscription cap.
          perSubscription: Number(values.concurrency),
          ...defaultDeliverySchedule(),
        }),
    );
    const webhooksServed = await serveInProcess(
      'webhooks',
      createWebhooksServer({ repo, secrets, policy, resolver: systemResolver, groups, worker: workers[0]! }),
      webhooksV1.WebhooksServiceClient,
      5_000,
    );
    const webhooks = webhooksServed.client;

    // The receiver: answers 204 at once, notes when each webhook-id first arrived.
    const arrivals = new Map<string, number>();
    let duplicates = 0;
    const samples: { body: string; headers: http.IncomingHttpHeaders }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const id = String(req.headers['webhook-id']);
        if (arrivals.has(id)) duplicates++;
        else arrivals.set(id, Date.now());
        if (samples.length < 20) samples.push({ body, headers: req.headers });
        res.writeHead(204).end();
      });
    });
    receiver.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const { secret } = await webhooks.createSubscription(
      {
        groupId: 1,
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
        events: ['drive.reported'],
      },
      { organizationId: 1 },
    );

    // As in production: the relay every 250 ms, each worker polling every 250 ms (and woken by PublishEvents).
    const relay = new OutboxRelay({
      knex: drivesDb.knex,
      batchSize: 500,
      publish: async (rows) => void (await webhooks.publishEvents({ events: rows.map(toWebhookEvent) })),
    });
    const loops = [
      runEvery({ name: 'relay', everyMs: 250, run: () => relay.run() }, (err) =>
        process.stderr.write(`relay: ${String(err)}\n`),
      ),
      ...workers.map((w) => runEvery(deliveryPoll(w, 250), () => {})),
    ];

    // The burst: 8 writers at once, each committing transactions of 100 events.
    const started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = (next += 100) - 100; i < events; i = (next += 100) - 100) {
          await inOrganization(drivesDb.knex, 1, async (trx) => {
            for (let j = i; j < Math.min(events, i + 100); j++)
              await recordEvent(trx, {
                type: 'drive.reported',
                groupId: '1',
                userId: 'BobDriver1',
                data: { id: String(j + 1) },
              });
          });
        }
      }),
    );
    const written = Date.now();
    for (;;) {
      if (arrivals.size >= events) break;
      if (Date.now() - written > 600_000) throw new Error(`only ${arrivals.size} of ${events} delivered in 10 minutes`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const done = Date.now();
    // Each event's commit time, to the millisecond, from the Webhooks service's copy.
    const occurred = new Map<string, number>(
      (await webhooksDb.knex('events').select('id', 'occurred_at')).map((r: { id: string; occurred_at: Date }) => [
        r.id,
        r.occurred_at.getTime(),
      ]),
    );
    const lags = [...arrivals].map(([id, at]) => at - occurred.get(id)!).sort((a, b) => a - b);
    for (const s of samples) new Webhook(secret).verify(s.body, s.headers as Record<string, string>);

    for (const loop of loops) await loop.stop();
    await Promise.all(workers.map((w) => w.stop()));
    receiver.close();
    await webhooksServed.stop();
    await groupsServed.stop();
    await Promise.all([drivesDb.close(), groupsDb.close(), webhooksDb.close()]);

    const result = {
      events,
      workers: workers.length,
      concurrency: Number(values.concurrency),
      write_seconds: (written - started) / 1000,
      write_rate_per_second: Math.round(events / ((written - started) / 1000)),
      delivered_seconds: (done - started) / 1000,
      throughput_per_second: Math.round(events / ((done - started) / 1000)),
      lag_ms: { p50: quantile(lags, 0.5), p90: quantile(lags, 0.9), p99: quantile(lags, 0.99), max: lags.at(-1) },
      duplicates,
      signatures_verified: samples.length,
    };
    process.stdout.write(
      `${events} events committed in ${result.write_seconds.toFixed(1)} s (${result.write_rate_per_second}/s); ` +
        `all delivered after ${result.delivered_seconds.toFixed(1)} s: ${result.throughput_per_second} deliveries/s ` +
        `(${workers.length} workers × ${values.concurrency}); lag from commit p50 ${result.lag_ms.p50} ms, ` +
        `p90 ${result.lag_ms.p90} ms, p99 ${result.lag_ms.p99} ms, max ${result.lag_ms.max} ms; ${duplicates} duplicates\n`,
    );
    if (values.smoke) return; // a smoke run's figures are not results
    const dir = path.join(__dirname, '..', 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'webhooks.json'),
      JSON.stringify({ date: new Date().toISOString(), node: process.version, ...result }, null, 2) + '\n',
    );
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`webhooks bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
