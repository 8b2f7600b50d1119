import { drivesV1, groupsV1, webhooksV1 } from '@mileage/proto';
import { provisioningEventRepresentation, trailOldestFirst } from '@mileage/runtime/audit';
import { snapshotInOrganization, type Knex } from '@mileage/runtime/database';
import { LONGEST_CALL_DEADLINE_MS, type PromiseClient } from '@mileage/runtime/grpc';
import {
  exportPartKey,
  readInChunks,
  writeExportPart,
  type ArchiveStore,
  type ExportPartFile,
} from '@mileage/runtime/storage';
import { type Logger } from '@mileage/runtime/telemetry';
import { userRepresentation } from '@mileage/scim-domain';
import { ExportJobs, archiveKey, type ExportRow } from './exports-repo';
import type { ExportMetrics } from './lifecycle-metrics';
import { trailResource, type TrailColumns } from './provisioning-events';
import { tarGz, type TarEntry } from './tar-gz';
import { mergeTrailParts } from './trail-merge';
import { SELECT_COLUMNS, toUser } from './users-repo';

/** The archive's format, named in its manifest. */
export const EXPORT_FORMAT = 'mileage-export/1';
/**
 * Rows per statement while a part is read: memory stays flat whatever the organization's size. Small for the thread's
 * sake: a statement's rows are parsed and rendered on the thread that also answers the other organizations' user
 * routes, with no turn of its event loop between them (docs/benchmarks.md, "The Users part in statements of 250
 * users").
 */
export const PAGE_ROWS = 250;
/** How long a runner's claim on a job holds without news from it. */
export const EXPORT_CLAIM_MS = 60_000;

// The provisioning trail has two owners, each writing its entries oldest first in a part of its own; the job merges
// the parts into the archive's one trail file.
const TRAIL_FILE = 'provisioning_events.jsonl';
const USERS_TRAIL_PART = 'provisioning_events.users.jsonl';
const GROUPS_TRAIL_PART = 'provisioning_events.groups.jsonl';
const TRAIL_PARTS = new Set([USERS_TRAIL_PART, GROUPS_TRAIL_PART]);

// The files each owner writes into an export's parts (exportPartKey), named once: the erasure removes them all.
const USERS_PART_FILES = ['users.jsonl', 'scim_tokens.jsonl', USERS_TRAIL_PART, TRAIL_FILE] as const;
const DRIVES_PART_FILES = ['reported_drives.jsonl', 'reported_drives.csv'];
const WEBHOOKS_PART_FILES = ['webhooks.jsonl'];
const GROUPS_PART_FILES = ['groups.jsonl', GROUPS_TRAIL_PART];
const EVERY_PART_FILE = [...USERS_PART_FILES, ...DRIVES_PART_FILES, ...WEBHOOKS_PART_FILES, ...GROUPS_PART_FILES];

export interface ExportJobDeps {
  knex: Knex;
  store: ArchiveStore;
  logger: Logger;
  /** Where `meta.location` of a user points (the public SCIM base, …/scim/v2). */
  scimBaseUrl: string;
  /** The other owners, each writing its part from its own snapshot (the Drives service's reported drives). */
  owners?: readonly ExportOwner[];
  /** Counts each export as it ends (organization_exports_total) and times the completed ones. */
  metrics?: ExportMetrics;
}

/** An owner of a part of the archive other than the Users service: it writes its files to the same store. */
export interface ExportOwner {
  name: string;
  /** The files it may write: removed whatever happens, so a part written before a failure is not left behind. */
  files: readonly string[];
  writePart(exportId: string, organizationId: number): Promise<ExportPartFile[]>;
}

/** A part of the archive from one owner's snapshot: its rows, a page of statements at a time. */
interface PartSpec {
  name: string;
  /** The rows after `after` (the last row's key), in key order, at most PAGE_ROWS. */
  page(trx: Knex.Transaction, organizationId: number, after: string): Promise<{ key: string; line: object }[]>;
}

const usersPart = (scimBaseUrl: string): PartSpec => ({
  name: USERS_PART_FILES[0],
  async page(trx, organizationId, after) {
    const { rows } = await trx.raw<{ rows: Parameters<typeof toUser>[0][] }>(
      `SELECT ${SELECT_COLUMNS} FROM users WHERE organization_id = ? AND deleted_at IS NULL AND id > ?
        ORDER BY id LIMIT ?`,
      [organizationId, after, PAGE_ROWS],
    );
    return rows.map((row) => ({ key: row.id, line: userRepresentation(toUser(row), `${scimBaseUrl}/Users`) }));
  },
});

const scimTokensPart: PartSpec = {
  name: USERS_PART_FILES[1],
  async page(trx, organizationId, after) {
    // Every token the organization has had, revoked and expired ones too; never the secret's hash.
    const { rows } = await trx.raw<{ rows: Record<string, unknown>[] }>(
      `SELECT id::text AS id, name, created_at, expires_at, revoked_at, last_used_at FROM scim_tokens
        WHERE organization_id = ? AND id::text > ? ORDER BY id::text LIMIT ?`,
      [organizationId, after, PAGE_ROWS],
    );
    return rows.map((row) => ({ key: row.id as string, line: row }));
  },
};

/**
 * The Users service's entries of the provisioning trail (its users' changes, its SCIM tokens' creation and
 * revocation, the exports' requests, downloads and expiries) as GET /v1/organization/provisioning-events shows them,
 * oldest first, times to the microsecond (trailOldestFirst).
 */
async function* usersTrail(trx: Knex.Transaction, organizationId: number): AsyncGenerator<string> {
  const columns =
    'actor, operation, user_id, scim_token_id::text AS scim_token_id, export_id::text AS export_id, request_id';
  for await (const row of trailOldestFirst<TrailColumns>(
    trx,
    'provisioning_audit',
    columns,
    organizationId,
    PAGE_ROWS,
  )) {
    yield `${JSON.stringify(
      provisioningEventRepresentation('users', {
        ...row,
        action: row.operation,
        requestId: row.request_id,
        ...trailResource(row),
      }),
    )}\n`;
  }
}

/**
 * Runs one claimed export: the Users schema's parts from one snapshot (REPEATABLE READ), each written to the store as
 * it is read; then the other owners' parts; then the owners' parts of the provisioning trail merged into its one file;
 * then the archive (manifest first) assembled from them; then the parts removed. Any failure — a full disk,
 * a store that does not answer — fails the job with its reason and leaves no archive (the store writes whole objects
 * only), so a new request can follow at once.
 */
export async function runExport(deps: ExportJobDeps, job: ExportRow): Promise<void> {
  const jobs = new ExportJobs(deps.knex);
  const organizationId = Number(job.organization_id);
  // The archive's files, and the owners' parts of the trail, which its file merges.
  const written: ExportPartFile[] = [];
  const trailParts: ExportPartFile[] = [];
  let rows = 0;
  // The claim is renewed a third of its time apart while the job runs, however long one phase takes; a runner that
  // dies stops renewing it, and another replica takes the job over once it lapses.
  const heartbeat = setInterval(() => {
    jobs.renewClaim(job.id, EXPORT_CLAIM_MS).catch((err: unknown) => deps.logger.warn({ err }, 'export claim renewal'));
  }, EXPORT_CLAIM_MS / 3);
  try {
    const { asOf, organization } = await snapshotInOrganization(deps.knex, organizationId, async (trx) => {
      // The snapshot's instant: what every part shows the organization as.
      const { rows: head } = await trx.raw<{ rows: { as_of: Date; name: string }[] }>(
        `SELECT now() AS as_of, name FROM organizations WHERE id = ?`,
        [organizationId],
      );
      for (const part of [usersPart(deps.scimBaseUrl), scimTokensPart]) {
        await jobs.progress(job.id, part.name.replace(/\.\w+$/, ''), rows, EXPORT_CLAIM_MS);
        const file = await writeExportPart(deps.store, job.id, part.name, linesOf(part, trx, organizationId));
        written.push(file);
        rows += file.rows;
      }
      trailParts.push(await writeExportPart(deps.store, job.id, USERS_TRAIL_PART, usersTrail(trx, organizationId)));
      return { asOf: head[0]!.as_of, organization: { id: String(organizationId), name: head[0]!.name } };
    });
    for (const owner of deps.owners ?? []) {
      await jobs.progress(job.id, owner.name, rows, EXPORT_CLAIM_MS);
      for (const file of await owner.writePart(job.id, organizationId)) {
        if (TRAIL_PARTS.has(file.name)) {
          trailParts.push(file);
          continue;
        }
        written.push(file);
        rows += file.rows;
      }
    }
    await jobs.progress(job.id, 'provisioning_events', rows, EXPORT_CLAIM_MS);
    written.push(await mergeTrail(deps.store, job.id, trailParts));
    rows += written.at(-1)!.rows;
    await jobs.progress(job.id, 'archive', rows, EXPORT_CLAIM_MS);
    const manifest = Buffer.from(
      `${JSON.stringify(
        {
          format: EXPORT_FORMAT,
          organization,
          requested_at: job.requested_at.toISOString(),
          as_of: asOf.toISOString(),
          files: written.map(({ name, rows: count, sha256 }) => ({ name, rows: count, sha256 })),
        },
        null,
        2,
      )}\n`,
    );
    const entries: TarEntry[] = [
      { name: 'manifest.json', size: manifest.length, body: async () => [manifest] },
      ...written.map((file) => ({
        name: file.name,
        size: file.sizeBytes,
        gzipBytes: file.gzipBytes,
        // A part stored compressed goes to the archive's store chunk by chunk as it is (tarGz), so one piece of memory
        // serves all its chunks; a text part is compressed on its way, and zlib may hold several chunks at once.
        body: async () =>
          file.gzipBytes === undefined
            ? deps.store.get(exportPartKey(job.id, file.name))
            : readInChunks(deps.store, exportPartKey(job.id, file.name), file.gzipBytes),
      })),
    ];
    const archive = await deps.store.put(archiveKey(job.id), tarGz(entries, asOf.getTime()));
    if (!(await jobs.complete(job.id, archive, rows))) {
      // The organization's erasure ended the export while it ran: nothing of it may stay in the store.
      await deps.store.delete(archiveKey(job.id));
      deps.logger.info({ export_id: job.id, organization_id: organizationId }, 'export ended by an erasure');
      deps.metrics?.ended('ended_by_erasure');
      return;
    }
    deps.metrics?.ended('completed', job.requested_at);
    deps.logger.info(
      { export_id: job.id, organization_id: organizationId, rows, size_bytes: archive.sizeBytes },
      'export completed',
    );
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    deps.logger.warn({ export_id: job.id, organization_id: organizationId, err }, 'export failed');
    await deps.store.delete(archiveKey(job.id)).catch(() => {});
    await jobs.fail(job.id, `the export could not be written: ${reason}`);
    deps.metrics?.ended('failed');
  } finally {
    clearInterval(heartbeat);
    const parts = new Set([...USERS_PART_FILES, ...(deps.owners ?? []).flatMap((o) => o.files)]);
    await Promise.all([...parts].map((name) => deps.store.delete(exportPartKey(job.id, name)).catch(() => {})));
  }
}

/**
 * The archive's provisioning trail: the owners' parts merged oldest first, each read as the merge goes (memory holds a
 * line of each). Every entry of the parts is in it once, or the export fails.
 */
async function mergeTrail(store: ArchiveStore, exportId: string, parts: ExportPartFile[]): Promise<ExportPartFile> {
  const bodies = await Promise.all(parts.map((part) => store.get(exportPartKey(exportId, part.name))));
  try {
    const file = await writeExportPart(store, exportId, TRAIL_FILE, mergeTrailParts(bodies));
    const expected = parts.reduce((sum, part) => sum + part.rows, 0);
    if (file.rows !== expected)
      throw new Error(`the provisioning trail merged into ${file.rows} entries, not ${expected}`);
    return file;
  } finally {
    for (const body of bodies) body.destroy();
  }
}

/** A part's JSON lines, a page of rows at a time, in the snapshot's transaction. */
async function* linesOf(part: PartSpec, trx: Knex.Transaction, organizationId: number): AsyncGenerator<string> {
  let after = '';
  for (;;) {
    const page = await part.page(trx, organizationId, after);
    for (const { line } of page) yield `${JSON.stringify(line)}\n`;
    if (page.length < PAGE_ROWS) return;
    after = page[page.length - 1]!.key;
  }
}

/**
 * The export jobs' background task: claims the oldest waiting export and runs it (one at a time per replica), then
 * the housekeeping: archives past their expiry are deleted and their records marked expired, in their trail.
 */
export function exportTasks(deps: ExportJobDeps, everyMs: number) {
  const jobs = new ExportJobs(deps.knex);
  return [
    {
      name: 'organization-exports',
      everyMs,
      async run() {
        const job = await jobs.claim(EXPORT_CLAIM_MS);
        if (job) await runExport(deps, job);
      },
    },
    {
      name: 'organization-exports-expiry',
      everyMs: 60_000,
      run: () => expireExports(deps),
    },
  ];
}

/** Deletes the archives past their expiry and marks their exports expired (an entry in each organization's trail). */
export async function expireExports(deps: Pick<ExportJobDeps, 'knex' | 'store' | 'metrics'>): Promise<number> {
  const jobs = new ExportJobs(deps.knex);
  const due = await jobs.expiredArchives(100);
  for (const row of due) {
    await deps.store.delete(archiveKey(row.id));
    await jobs.markExpired(row);
    deps.metrics?.ended('expired');
  }
  return due.length;
}

/**
 * How long an owner may take to write its part (a large organization's reported drives: minutes): the longest a call
 * may take. Its client must be one for long calls (exportOwnerClients), or the call ends when its connection reaches
 * its age.
 */
const OWNER_PART_DEADLINE_MS = LONGEST_CALL_DEADLINE_MS;

/**
 * The clients of the other owners (those whose address is configured), as the Users process declares them. Each
 * writes its part in one call, which may take minutes and so outlive its connection: clients for long calls.
 */
export function exportOwnerClients(config: {
  GROUPS_ADDRESS?: string | undefined;
  DRIVES_ADDRESS?: string | undefined;
  WEBHOOKS_ADDRESS?: string | undefined;
}) {
  const longCalls = { deadlineMs: 3_000, longCalls: true };
  return {
    ...(config.GROUPS_ADDRESS
      ? { groups: { client: groupsV1.GroupsServiceClient, address: config.GROUPS_ADDRESS, ...longCalls } }
      : {}),
    ...(config.DRIVES_ADDRESS
      ? { drives: { client: drivesV1.DrivesServiceClient, address: config.DRIVES_ADDRESS, ...longCalls } }
      : {}),
    ...(config.WEBHOOKS_ADDRESS
      ? {
          webhooksExports: {
            client: webhooksV1.WebhooksServiceClient,
            address: config.WEBHOOKS_ADDRESS,
            ...longCalls,
          },
        }
      : {}),
  };
}

/** The Drives service as an owner of the archive: its reported drives, JSON Lines and CSV. */
export function drivesExportOwner(drives: PromiseClient<drivesV1.DrivesServiceClient>): ExportOwner {
  return {
    name: 'reported_drives',
    files: DRIVES_PART_FILES,
    async writePart(exportId, organizationId) {
      const { files } = await drives.writeExportPart(
        { exportId },
        { organizationId, deadlineMs: OWNER_PART_DEADLINE_MS },
      );
      return files.map((f) => ({
        name: f.name,
        rows: f.rows,
        sha256: f.sha256,
        sizeBytes: f.sizeBytes,
        ...(f.gzipBytes > 0 && { gzipBytes: f.gzipBytes }),
      }));
    },
  };
}

/** The Webhooks service as an owner of the archive: the subscriptions, without their secrets. */
export function webhooksExportOwner(webhooks: PromiseClient<webhooksV1.WebhooksServiceClient>): ExportOwner {
  return {
    name: 'webhooks',
    files: WEBHOOKS_PART_FILES,
    async writePart(exportId, organizationId) {
      const { files } = await webhooks.writeExportPart(
        { exportId },
        { organizationId, deadlineMs: OWNER_PART_DEADLINE_MS },
      );
      return files.map((f) => ({ name: f.name, rows: f.rows, sha256: f.sha256, sizeBytes: f.sizeBytes }));
    },
  };
}

/** The Groups service as an owner of the archive: the groups with their members and admins, and its trail's part. */
export function groupsExportOwner(groups: PromiseClient<groupsV1.GroupsServiceClient>): ExportOwner {
  return {
    name: 'groups',
    files: GROUPS_PART_FILES,
    async writePart(exportId, organizationId) {
      const { files } = await groups.writeExportPart(
        { exportId },
        { organizationId, deadlineMs: OWNER_PART_DEADLINE_MS },
      );
      return files.map((f) => ({ name: f.name, rows: f.rows, sha256: f.sha256, sizeBytes: f.sizeBytes }));
    },
  };
}

/**
 * Before an organization's rows are erased: ends its exports and deletes their archives and parts from the store
 * (docs/operations.md, "Offboarding and erasure"). Idempotent, so an erasure killed anywhere deletes them on its next
 * run; the records themselves go with the organization's other rows.
 */
export async function deleteExportsOfErasedOrganization(
  knex: Knex,
  store: ArchiveStore,
  organizationId: number,
): Promise<number> {
  const jobs = new ExportJobs(knex);
  const ids = await jobs.endForErasure(organizationId);
  for (const id of ids) {
    const keys = [archiveKey(id), ...EVERY_PART_FILE.map((name) => exportPartKey(id, name))];
    await Promise.all(keys.map((key) => store.delete(key)));
  }
  if (ids.length > 0) await jobs.markErased(organizationId, ids);
  return ids.length;
}
