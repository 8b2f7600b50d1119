// The nightly sync: every page of one team's reported drives through next_cursor, one request at a time.
import { createHash } from 'node:crypto';
import { CpuMeter } from './proc';
import type { BenchStack } from './stack';

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
  target: 'full' | 'bare',
  limit: number,
  maxPages = 0,
): Promise<WalkResult> {
  const { groupId, adminId } = stack.data.walkGroup;
  const base = target === 'full' ? stack.gatewayUrl : stack.bareUrl;
  const headers: Record<string, string> =
    target === 'full' ? { authorization: `Bearer ${stack.tokens.get(adminId)!}` } : { 'x-user-id': adminId };
  await stack.refreshBackends();
  const meter = new CpuMeter(target === 'full' ? stack.fullPids : stack.barePids);
  const started = process.hrtime.bigint();
  const pageHashes: string[] = [];
  let drives = 0;
  let cursor: string | null = null;
  do {
    const query: string = `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await fetch(`${base}/v1/groups/${groupId}/reported-drives?${query}`, { headers });
    const text = await res.text();
    if (res.status !== 200)
      throw new Error(
        `sync walk (${target}): page ${pageHashes.length + 1} answered ${res.status}: ${text.slice(0, 300)}`,
      );
    pageHashes.push(createHash('sha256').update(text).digest('base64url'));
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
