// Tasks for pages-worker.test.ts, run in pagesInWorker's worker thread.
import { getPriority } from 'node:os';
import { schedulingPolicy } from './idle-thread';
import { PageBytes, pagesWrittenAgain, type ExportFilesPage } from './part';

/**
 * `count` pages, each saying its number, and the priority and scheduling policy of the thread that rendered it; `made`
 * counts them.
 */
export async function* numberedPages({ count, made }: { count: number; made: SharedArrayBuffer }) {
  const counter = new Int32Array(made);
  for (let i = 1; i <= count; i++) {
    const page: ExportFilesPage = { rows: 1, texts: [`${i}\n`, `${getPriority()}\n`, `${schedulingPolicy()}\n`] };
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

/**
 * `count` pages of 100 KiB as bytes, each once the one before has come back written (`written`, its number as a
 * credit); `reused` ends up holding how many of them began in memory given back.
 */
export async function* pagesWrittenInTurn({ count, reused }: { count: number; reused: SharedArrayBuffer }) {
  for (let i = 0; i < count; i++) {
    const bytes = new PageBytes(100 * 1024);
    bytes.write(`${i}\n`.padStart(100 * 1024, '.'));
    Atomics.store(new Int32Array(reused), 0, pagesWrittenAgain());
    yield { rows: 1, texts: [bytes.take()] } satisfies ExportFilesPage;
  }
}
