// The nightly sync: every page of one team's reported drives through next_cursor, one request at a time.
import { CursorCodec, driveListFingerprint } from '@mileage/gateway/cursor';
import { createHash } from 'node:crypto';
import { CpuMeter, waitFor } from './proc';
import type { BenchStack } from './stack';
import { withoutReadTimes } from './verdict';

export interface WalkResult {
  drives: number;
  pages: number;
  seconds: number;
  drivesPerSecond: number;
  /** CPU µs per drive walked, by process (PostgreSQL: all its processes). */
  cpuMicrosPerDriveByProcess: Record<string, number>;
  /** A digest of every page's body, to compare the full path with the bare server. */
  pageHashes: string[];
}

export async function walk(
  stack: BenchStack,
  target: 'full' | 'bare' | 'floor',
  limit: number,
  maxPages = 0,
  from?: string,
): Promise<WalkResult> {
  const { groupId, adminId } = stack.data.walkGroup;
  const base = { full: stack.gatewayUrl, bare: stack.bareUrl, floor: stack.floorUrl }[target];
  const headers: Record<string, string> =
    target === 'full' ? { authorization: `Bearer ${stack.tokens.get(adminId)!}` } : { 'x-user-id': adminId };
  // Loads run just before may have left the gateway's circuit to the Drives service open (deadlines missed on a busy
  // machine): the walk starts once the first page answers.
  const first = `${base}/v1/groups/${groupId}/reported-drives?limit=${limit}${from ? `&cursor=${encodeURIComponent(from)}` : ''}`;
  let status = 0;
  await waitFor(`the sync walk's first page (${target})`, async () => {
    status = (await fetch(first, { headers })).status;
    return status === 200;
  }).catch(() => {
    throw new Error(`sync walk (${target}): its first page still answered ${status} after 30 s`);
  });
  await stack.refreshBackends();
  const meter = new CpuMeter({ full: stack.fullPids, bare: stack.barePids, floor: stack.floorPids }[target]);
  const started = process.hrtime.bigint();
  const pageHashes: string[] = [];
  let drives = 0;
  let cursor: string | null = from ?? null;
  do {
    const query: string = `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await fetch(`${base}/v1/groups/${groupId}/reported-drives?${query}`, { headers });
    const text = await res.text();
    if (res.status !== 200)
      throw new Error(
        `sync walk (${target}): page ${pageHashes.length + 1} answered ${res.status}: ${text.slice(0, 300)}`,
      );
    pageHashes.push(createHash('sha256').update(withoutReadTimes(text)).digest('base64url'));
    const page = JSON.parse(text) as { results: unknown[]; has_more: boolean; next_cursor: string | null };
    drives += page.results.length;
    cursor = page.has_more ? page.next_cursor : null;
  } while (cursor && (!maxPages || pageHashes.length < maxPages));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = meter.stop();
  return {
    drives,
    pages: pageHashes.length,
    seconds,
    drivesPerSecond: drives / seconds,
    cpuMicrosPerDriveByProcess: Object.fromEntries(
      Object.entries(cpu)
        .filter(([, v]) => v > 0)
        .map(([k, v]) => [k, Math.round((v / Math.max(drives, 1)) * 1e6 * 10) / 10]),
    ),
    pageHashes,
  };
}

/**
 * A cursor `pages` pages of `limit` before the end of the sync team's list, signed by the gateway's codec with its key: a walk from it is the end of a long sync, as when payroll resumes from
 * a cursor deep in the list.
 */
export async function deepCursor(stack: BenchStack, limit: number, pages: number): Promise<string> {
  const { groupId } = stack.data.walkGroup;
  const [row] = await stack.sql<{ modified_at: Date; drive_id: string }>(
    `SELECT modified_at, drive_id FROM drives.drive_reports WHERE group_id = $1
      ORDER BY modified_at, drive_id OFFSET $2 LIMIT 1`,
    [groupId, limit * pages],
  );
  if (!row) throw new Error(`the sync team has no ${limit * pages + 1} reports`);
  const fingerprint = driveListFingerprint({ route: 'group-reported', group: groupId }, { sortField: 'modified' });
  return new CursorCodec(stack.cursorSecret).encode(
    { sortTime: row.modified_at.toISOString(), id: Number(row.drive_id) },
    fingerprint,
  );
}
