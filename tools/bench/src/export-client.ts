// bench:export's customer: an organization admin's export through the public API with the typed client's helpers
// (request, wait with progress, download resuming with Range), in a process of its own so that neither its polling nor
// its download shares an event loop with the load generator. Prints one JSON line: when each phase was first seen, when
// the export was ready, when the archive was on disk, and the archive's manifest.
import { createMileageClient, downloadExport, MileageApiError, requestExport, waitForExport } from '@mileage/client';
import { createReadStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGunzip } from 'node:zlib';
import type { ExportClientResult, ExportManifest } from './export-verdict';

/** How often the export's progress is looked at: the resolution of each phase's time. */
const POLL_MS = 200;

/** The archive's first entry, which the format puts first: its manifest (a ustar header, then the file). */
async function readManifest(file: string): Promise<ExportManifest> {
  let buffered = Buffer.alloc(0);
  const gunzip = createReadStream(file).pipe(createGunzip());
  for await (const chunk of gunzip) {
    buffered = Buffer.concat([buffered, chunk as Buffer]);
    if (buffered.length < 512) continue;
    const name = buffered.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    if (name !== 'manifest.json') throw new Error(`the archive's first entry is ${name}, not manifest.json`);
    const size = parseInt(buffered.subarray(124, 136).toString('utf8').replace(/\0.*$/s, '').trim(), 8);
    if (buffered.length < 512 + size) continue;
    gunzip.destroy();
    return JSON.parse(buffered.subarray(512, 512 + size).toString('utf8')) as ExportManifest;
  }
  throw new Error('the archive ended before its manifest');
}

async function main(): Promise<ExportClientResult> {
  const baseUrl = process.env.BENCH_GATEWAY_URL!;
  const token = process.env.BENCH_TOKEN!;
  const file = process.env.BENCH_ARCHIVE_FILE!;
  const client = createMileageClient({ baseUrl, token });
  const started = process.hrtime.bigint();
  const at = () => Number(process.hrtime.bigint() - started) / 1e9;
  // A 503 or 429 is waited out and asked again, as a patient customer would; each is counted and reported.
  const refusals: string[] = [];
  const patiently = async <T>(step: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        return await step();
      } catch (err) {
        if (!(err instanceof MileageApiError) || ![429, 503].includes(err.status)) throw err;
        refusals.push(`${at().toFixed(1)} s: ${err.message}`);
        await sleep(POLL_MS);
      }
    }
  };
  const { id } = await patiently(() => requestExport(client));
  const phases: ExportClientResult['phases'] = [];
  const exported = await patiently(() =>
    waitForExport(client, id, {
      intervalMs: POLL_MS,
      onProgress: (e) => {
        const phase = e.status === 'completed' ? 'completed' : e.progress.phase || e.status;
        if (phases[phases.length - 1]?.phase !== phase)
          phases.push({ phase, wallMs: Date.now(), rows: e.progress.rows });
      },
    }),
  );
  const readySeconds = at();
  await downloadExport(id, file, { baseUrl, token });
  const downloadedSeconds = at();
  const downloadedWallMs = Date.now();
  return {
    id,
    phases,
    readySeconds,
    downloadedSeconds,
    downloadedWallMs,
    sizeBytes: exported.size_bytes ?? 0,
    refusals,
    manifest: await readManifest(file),
  };
}

main().then(
  (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
  (err: unknown) => {
    process.stderr.write(`export client: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
