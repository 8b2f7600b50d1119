import type { webhooksV1 } from '@mileage/proto';
import { snapshotInOrganization, type Knex } from '@mileage/runtime/database';
import { isUuid } from '@mileage/runtime/formats';
import { errors, type Handlers, requireOrganization } from '@mileage/runtime/grpc';
import { writeExportPart } from '@mileage/runtime/storage';
import type { WebhooksServerDeps } from './webhooks-deps';

/** Rows per statement while the part is read. */
const PAGE_ROWS = 1_000;

/** The Webhooks service's part of an organization export (CONTRACT §8): its subscriptions, never their secrets. */
export function exportHandlers(
  deps: WebhooksServerDeps,
): Pick<Handlers<webhooksV1.WebhooksServiceServer>, 'writeExportPart'> {
  return {
    async writeExportPart(request, ctx) {
      if (!isUuid(request.exportId))
        throw errors.invalidArgument('export_id must be a UUID', [{ field: 'export_id', description: 'a UUID' }]);
      const { archives, knex } = deps;
      if (!archives || !knex) throw errors.unavailable('organization exports are not configured on this installation');
      const organizationId = requireOrganization(ctx);
      const file = await snapshotInOrganization(knex, organizationId, (trx) =>
        writeExportPart(archives, request.exportId, 'webhooks.jsonl', subscriptions(trx, organizationId)),
      );
      return { files: [file] };
    },
  };
}

/** The subscriptions as the API shows them (`GET …/webhooks`), with their group; a page of statements at a time. */
async function* subscriptions(trx: Knex.Transaction, organizationId: number): AsyncGenerator<string> {
  for (let after = '00000000-0000-0000-0000-000000000000'; ;) {
    const { rows } = await trx.raw<{ rows: Record<string, unknown>[] }>(
      `SELECT id, group_id, url, events, state, disabled_reason, disabled_at, failure_run, created_at
         FROM subscriptions WHERE organization_id = ? AND id > ? ORDER BY id LIMIT ?`,
      [organizationId, after, PAGE_ROWS],
    );
    for (const row of rows)
      yield `${JSON.stringify({
        id: row.id,
        group_id: Number(row.group_id),
        url: row.url,
        events: row.events,
        status: row.state,
        disabled_reason: row.disabled_reason ?? null,
        disabled_at: row.disabled_at ?? null,
        failure_run: row.failure_run,
        created: row.created_at,
      })}\n`;
    if (rows.length < PAGE_ROWS) return;
    after = String(rows[rows.length - 1]!.id);
  }
}
