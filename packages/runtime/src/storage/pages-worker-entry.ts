// A worker thread of pagesInWorker: lowers its own priority and scheduling class, then renders its task's pages, each
// as the thread that started it has room for one (credits).
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { enterIdleScheduling } from './idle-thread';
import { encodedPages, type ExportFilesPage, givePageBackToWrite, isPageMemory } from './part';
import { RENDERING_PRIORITY, type PagesWorkerTask, type ToPagesWorker } from './pages-worker';

/**
 * The memory of a page's byte texts, handed over rather than copied (the task does not touch a page it has yielded):
 * only a buffer of its own (PageBytes), never one of Node's shared pool of small buffers.
 */
function transferable(page: ExportFilesPage): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const text of page.texts) if (typeof text !== 'string' && isPageMemory(text.buffer)) buffers.add(text.buffer);
  return [...buffers];
}

async function main(): Promise<void> {
  const port = parentPort!;
  try {
    setPriority(RENDERING_PRIORITY);
  } catch {
    // Raising a nice value is never refused on Linux; elsewhere the worker runs at the process's priority.
  }
  port.postMessage({ idle: enterIdleScheduling() });
  let credits = 0;
  let wake: (() => void) | undefined;
  port.on('message', (message: ToPagesWorker) => {
    if ('written' in message) return givePageBackToWrite(message.written);
    credits += message.credit;
    wake?.();
    wake = undefined;
  });
  const task = workerData as PagesWorkerTask;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the task's module is named at run time
  const rendered = (require(task.module) as Record<string, (data: unknown) => AsyncIterable<ExportFilesPage>>)[
    task.exportName
  ]!(task.data);
  const pages = task.files ? encodedPages(task.files, rendered) : rendered;
  for await (const page of pages) {
    while (credits === 0) await new Promise<void>((resolve) => (wake = resolve));
    credits--;
    port.postMessage({ page }, transferable(page));
  }
  // The thread that started it ends it (Worker.terminate) once it has taken this.
  port.postMessage({ end: true });
}

// A failure is told on the pages' own port, after the pages posted before it: the 'error' event of an uncaught error
// comes another way and could overtake them. One the port cannot carry ends the thread as an uncaught error.
main().catch((err: unknown) => {
  try {
    parentPort!.postMessage({ failure: err });
  } catch {
    throw err;
  }
});
