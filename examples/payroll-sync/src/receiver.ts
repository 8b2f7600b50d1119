import { verifyWebhook, WebhookVerificationError, type MileageClient } from '@mileage/client';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { runExport, type ExportResult } from './export';
import type { PayrollStore } from './store';

const MAX_BODY_BYTES = 256 * 1024;
const REMEMBERED_IDS = 10_000;

export interface ReceiverOptions {
  secret: string;
  client: MileageClient;
  store: PayrollStore;
  /** Told what happened (one line per delivery or sync); never the body or a secret. */
  log?: (line: string) => void;
}

export interface Receiver {
  server: Server;
  /** Runs a sync now (or joins the one under way, then runs once more) and resolves with its result. */
  sync(): Promise<ExportResult>;
  /** Resolves when no sync is running or queued. */
  idle(): Promise<void>;
}

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * The webhook receiver: `POST /webhooks` verifies the Standard Webhooks signature over the raw body (400 if it does not
 * verify), skips a `webhook-id` it has already applied, and applies the event. A withdrawal or deletion removes the row
 * at once (unless the row is newer than the event); every event of the team also starts a sync walk, which brings in
 * new and changed reports (an event says what changed, the change feed says how it is now). One writer: deliveries
 * and syncs go through one queue, so the state file is never written by two at once.
 */
export function createReceiver(options: ReceiverOptions): Receiver {
  const { store, client } = options;
  const log = options.log ?? (() => {});
  const applied = new Set<string>();
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(task: () => Promise<T> | T): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };
  let pendingSync: Promise<ExportResult> | undefined;
  const sync = (): Promise<ExportResult> => {
    // Events that arrive while a sync is queued share it: it starts after them.
    pendingSync ??= serial(async () => {
      pendingSync = undefined;
      const result = await runExport(client, store);
      log(
        `sync: ${result.upserts} changed, ${result.deletes} removed, ${result.rows} rows${result.full ? ' (full)' : ''}`,
      );
      return result;
    });
    return pendingSync;
  };

  const server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST' || req.url !== '/webhooks') {
        res.writeHead(req.url === '/webhooks' ? 405 : 404).end();
        return;
      }
      let body: Buffer;
      try {
        body = await readBody(req);
      } catch (err) {
        res.writeHead(err instanceof BodyTooLarge ? 413 : 400).end();
        return;
      }
      let verified;
      try {
        verified = verifyWebhook(options.secret, req.headers, body);
      } catch (err) {
        if (!(err instanceof WebhookVerificationError)) throw err;
        log(`refused a delivery: ${err.message}`);
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"detail":"signature does not verify"}');
        return;
      }
      const { id, event } = verified;
      if (applied.has(id)) {
        res.writeHead(204).end();
        return;
      }
      const data = event.data;
      if (data.group_id !== undefined && data.group_id !== store.groupId) {
        res.writeHead(204).end();
        return;
      }
      await serial(() => {
        if (
          (event.type === 'drive.deleted' || event.type === 'drive.report_withdrawn') &&
          data.drive_id !== undefined &&
          typeof data.modified === 'string'
        ) {
          const removed = store.removeFromEvent(String(data.drive_id), data.modified);
          log(`${event.type} ${data.drive_id}: ${removed ? 'row removed' : 'no row to remove'}`);
        } else log(`${event.type}${data.drive_id !== undefined ? ` ${data.drive_id}` : ''}`);
      });
      applied.add(id);
      if (applied.size > REMEMBERED_IDS) applied.delete(applied.values().next().value!);
      res.writeHead(204).end();
      // A drive event: the feed brings the new state of the report (user.deactivated changes no row).
      if (event.type !== 'user.deactivated') sync().catch((err: Error) => log(`sync failed: ${err.message}`));
    })().catch((err: Error) => {
      log(`delivery failed: ${err.message}`);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });

  return {
    server,
    sync,
    idle: async () => {
      for (;;) {
        const current = queue;
        await current;
        if (current === queue) return;
      }
    },
  };
}
