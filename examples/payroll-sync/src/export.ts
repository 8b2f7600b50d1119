import { applySync, syncReportedDrives, type MileageClient } from '@mileage/client';
import { PayrollStore } from './store';

export interface ExportResult {
  full: boolean;
  upserts: number;
  deletes: number;
  rows: number;
  watermark: string | null;
  csvChanged: boolean;
}

/**
 * One run of the export: an incremental sync walk from the stored watermark (a full one the first time, or when the
 * platform answers 410), applied to the store; the CSV and the state are written only when they change.
 */
export async function runExport(
  client: MileageClient,
  store: PayrollStore,
  options: { signal?: AbortSignal; onRetry?: (info: { status: number | 'network'; delayMs: number }) => void } = {},
): Promise<ExportResult> {
  const done = await applySync(
    syncReportedDrives(client, store.groupId, {
      state: store.syncState,
      includeDeleted: true,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onRetry ? { onRetry: options.onRetry } : {}),
    }),
    store.target(),
  );
  return {
    full: done.full,
    upserts: done.upserts,
    deletes: done.deletes,
    rows: store.rows.length,
    watermark: done.state.watermark,
    csvChanged: store.lastSave.csvChanged,
  };
}
