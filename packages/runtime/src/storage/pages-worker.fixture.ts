// Tasks for pages-worker.test.ts, run in pagesInWorker's worker thread.
import { getPriority } from 'node:os';
import { PageBytes, type ExportFilesPage } from './part';

/** `count` pages, each saying its number and the priority of the thread that rendered it; `made` counts them. */
export async function* numberedPages({ count, made }: { count: number; made: SharedArrayBuffer }) {
  const counter = new Int32Array(made);
  for (let i = 1; i <= count; i++) {
    const page: ExportFilesPage = { rows: 1, texts: [`${i}\n`, `${getPriority()}\n`] };
    Atomics.add(counter, 0, 1);
    Atomics.notify(counter, 0);
    yield page;
  }
}

/** One page, then a failure. */
export async function* failingPages() {
  yield { rows: 1, texts: ['1\n'] } satisfies ExportFilesPage;
  throw new Error('the source failed after its first page');
}

/** One page of `lines` lines with characters of two and three UTF-8 bytes, written as bytes from a tiny start. */
export async function* bytePages({ lines }: { lines: number }) {
  const bytes = new PageBytes(16);
  for (let i = 0; i < lines; i++) bytes.write(`${i} Zürich → Köln, 12 €\n`);
  yield { rows: lines, texts: [bytes.take()] } satisfies ExportFilesPage;
}
