import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { type ExportFilesPage, type ExportFileSpec, isPageMemory } from './part';

/**
 * How a worker that renders an export's pages is scheduled: Linux's idle class (SCHED_IDLE, enterIdleScheduling),
 * which runs it on a core only while no other thread of the machine (or of the pod's share) wants that core; where the
 * class cannot be had, the lowest nice value, this. Both belong to a thread on Linux, so only the worker's thread runs
 * so: background work that yields by itself, instead of pausing by the clock whether or not anyone waits. V8's helper
 * threads, which collect the worker's garbage too, stay at the process's priority (a worker process niced whole was
 * tried: slower, no better for the other requests, and a process's memory more; docs/benchmarks.md).
 */
export const RENDERING_PRIORITY = 19;

/** Pages rendered ahead of the writer: one being written, one ready. */
const PAGES_AHEAD = 2;

/** The worker's script (pages-worker-entry.ts): `module`'s `exportName`(data), an async iterable of pages. */
export interface PagesWorkerTask {
  module: string;
  exportName: string;
  data: unknown;
  /** The pages encoded in the worker for these files (encodedPages; writeExportFiles' `encoded`). */
  files?: readonly ExportFileSpec[];
}

type FromWorker = { page: ExportFilesPage } | { end: true } | { failure: unknown } | { idle: boolean };
/** To the worker: room for more pages, or a page's memory back once its file has it (givePageBackToWrite). */
export type ToPagesWorker = { credit: number } | { written: ArrayBuffer };

/**
 * The pages of `task` as it renders them in a worker thread in the idle class or at RENDERING_PRIORITY (which of the
 * two is told to `onScheduled` first): the reading and rendering of a large export leave this thread's event loop (the
 * requests it serves) alone. Handed over, not buffered: the worker renders at most PAGES_AHEAD pages ahead of the pages
 * taken from here. A failure of the worker rejects the next page; stopping early (a failed write) stops the worker, and
 * with it its database connection.
 */
export async function* pagesInWorker(
  task: PagesWorkerTask,
  onScheduled?: (idle: boolean) => void,
): AsyncGenerator<ExportFilesPage> {
  const worker = new Worker(path.join(__dirname, 'pages-worker-entry.js'), {
    workerData: task,
    // Its own heap, bounded: a page at a time, whatever the export's size.
    resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 48 },
  });
  const arrived: FromWorker[] = [];
  let failure: Error | undefined;
  let exited = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  worker.on('message', (message: FromWorker) => {
    arrived.push(message);
    notify();
  });
  worker.on('error', (err) => {
    failure ??= err;
    notify();
  });
  worker.on('exit', () => {
    exited = true;
    notify();
  });
  const send = (message: ToPagesWorker, transfer: ArrayBuffer[] = []) => worker.postMessage(message, transfer);
  send({ credit: PAGES_AHEAD });
  try {
    for (;;) {
      const message = arrived.shift();
      if (message) {
        if ('end' in message) return;
        if ('failure' in message) throw message.failure;
        if ('idle' in message) {
          onScheduled?.(message.idle);
          continue;
        }
        const { page } = message;
        // Each text's memory goes back to the worker once every file written from it has it: the next pages are
        // written into it.
        const unwritten = new Set(page.texts.keys());
        page.written = (i) => {
          unwritten.delete(i);
          const memory = memoryOf(page.texts[i]);
          if (memory && ![...unwritten].some((j) => memoryOf(page.texts[j]) === memory))
            send({ written: memory }, [memory]);
        };
        yield page;
        send({ credit: 1 });
        continue;
      }
      if (failure) throw failure;
      if (exited) throw new Error('the export worker stopped before its last page');
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    await worker.terminate();
  }
}

/**
 * Memory of a page's own (PageBytes), which can move between threads: never one of Node's shared pool of small
 * buffers, nor one already handed on.
 */
const memoryOf = (text: string | Uint8Array | undefined) =>
  typeof text !== 'string' && isPageMemory(text?.buffer) ? text.buffer : undefined;
