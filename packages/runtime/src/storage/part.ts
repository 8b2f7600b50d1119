import type { ArchiveStore } from './archive-store';

/** A file of an export's archive as its owner wrote it: what the manifest says of it, and its size. */
export interface ExportPartFile {
  name: string;
  rows: number;
  sha256: string;
  sizeBytes: number;
}

/** Where an owner's part of an export is kept until the archive holds it. */
export const exportPartKey = (exportId: string, name: string) => `exports/${exportId}/parts/${name}`;

/**
 * Writes one part of an export to the store: `header` (a CSV's, not a row) and `lines` (each ending in a newline, one
 * row each), counted, in chunks of about 64 KiB (a write per line would cost more than the line).
 */
export async function writeExportPart(
  store: ArchiveStore,
  exportId: string,
  name: string,
  lines: AsyncIterable<string>,
  header = '',
): Promise<ExportPartFile> {
  let count = 0;
  async function* bytes() {
    let batch = header;
    for await (const line of lines) {
      count++;
      batch += line;
      if (batch.length >= 65_536) {
        yield Buffer.from(batch);
        batch = '';
      }
    }
    if (batch) yield Buffer.from(batch);
  }
  const stored = await store.put(exportPartKey(exportId, name), bytes());
  return { name, rows: count, sha256: stored.sha256, sizeBytes: stored.sizeBytes };
}
