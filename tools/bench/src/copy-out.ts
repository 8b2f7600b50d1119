// PostgreSQL's own `COPY (query) TO STDOUT`, its rows counted and dropped as they arrive: the ceiling bench:export
// holds an export's rows per second against. node-postgres runs it as a custom query object (a "submittable", as
// pg-cursor and pg-copy-streams are): the server's CopyData messages come to handleCopyData, one row each.
import type pg from 'pg';

export interface CopyOutResult {
  rows: number;
  bytes: number;
  seconds: number;
}

class CopyOutCounter {
  rows = 0;
  bytes = 0;
  readonly done: Promise<void>;
  private settle!: () => void;
  private reject!: (err: Error) => void;

  constructor(readonly text: string) {
    this.done = new Promise((resolve, reject) => {
      this.settle = resolve;
      this.reject = reject;
    });
  }

  submit(connection: { query(text: string): void }): void {
    connection.query(this.text);
  }

  handleCopyData(message: { chunk: Buffer }): void {
    this.rows++;
    this.bytes += message.chunk.length;
  }

  // node-postgres lets go of a query at its error (no ReadyForQuery follows for it): it ends there.
  handleError(err: Error): void {
    this.reject(err);
  }

  handleReadyForQuery(): void {
    this.settle();
  }

  // The other messages of a COPY's exchange carry nothing the count needs.
  handleCommandComplete(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {
    this.reject(new Error('COPY FROM is not what copyOut runs'));
  }
}

/** Runs `COPY (<query>) TO STDOUT` (text format) on `client` and counts what it sends. */
export async function copyOut(client: pg.Client, query: string): Promise<CopyOutResult> {
  const started = process.hrtime.bigint();
  const counter = new CopyOutCounter(`COPY (${query}) TO STDOUT`);
  void client.query(counter as unknown as pg.QueryConfig);
  await counter.done;
  return { rows: counter.rows, bytes: counter.bytes, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}
