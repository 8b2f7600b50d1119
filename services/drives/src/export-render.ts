// A page of the export's COPY rows rendered into its JSON Lines and CSV by the WebAssembly renderer
// (assembly/export-render.ts, built into dist/export-render.wasm): the rows are copied into its memory once a page,
// it writes both lines of each drive there, and the lines are copied out into the pages' buffers. A row it refuses
// (a field outside its forms) is rendered by exportedDriveLines, in its place.
import type { CopiedRows, PageBytes } from '@mileage/runtime/worker';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { exportedDriveLines, reviewCommentsJson, reviewCommentsText } from './export-lines';
import { csvField } from './csv';
import type { CommentRow } from './rows';

// What this module uses of the WebAssembly API (its types are the DOM library's, which this project does not load).
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
};
interface RendererExports {
  memory: { buffer: ArrayBuffer };
  render(
    start: number,
    end: number,
    json: number,
    csv: number,
    commentsJson: number,
    commentsJsonLength: number,
    commentsCsv: number,
    commentsCsvLength: number,
  ): number;
  reserve(bytes: number): number;
  jsonEnd: { value: number };
  csvEnd: { value: number };
}

let compiled: object | undefined;
const renderer = () => (compiled ??= new WebAssembly.Module(readFileSync(path.join(__dirname, 'export-render.wasm'))));

/** A region of the renderer's memory that grows (to the largest size asked) and is written from its start again. */
class Region {
  at = 0;
  capacity = 0;
  constructor(private readonly wasm: RendererExports) {}
  /** Room for `bytes` from the region's start. */
  fit(bytes: number): void {
    if (bytes <= this.capacity) return;
    this.capacity = Math.max(bytes, this.capacity * 2);
    this.at = this.wasm.reserve(this.capacity);
  }
}

/** What the renderer reads of a page of COPY rows. */
export type PageRows = Pick<CopiedRows, 'bytes' | 'length' | 'rowStart' | 'rowEnd' | 'row'>;

/** The renderer's instance, in the thread that renders (export-pages.ts): its memory is reused page after page. */
export class ExportRenderer {
  /** Rows refused by the WebAssembly renderer and rendered by exportedDriveLines instead. */
  refusedRows = 0;
  private readonly wasm: RendererExports;
  private view: Buffer;
  private readonly rows: Region;
  private readonly json: Region;
  private readonly csv: Region;
  private readonly comments: Region;

  constructor() {
    // AssemblyScript's abort (its allocator out of memory): an error of the page, which fails the task.
    const abort = () => {
      throw new Error('the export renderer aborted');
    };
    this.wasm = new WebAssembly.Instance(renderer(), { env: { abort } }).exports as unknown as RendererExports;
    this.view = Buffer.from(this.wasm.memory.buffer);
    this.rows = new Region(this.wasm);
    this.json = new Region(this.wasm);
    this.csv = new Region(this.wasm);
    this.comments = new Region(this.wasm);
    this.json.fit(1024 * 1024);
    this.csv.fit(512 * 1024);
  }

  /** The memory as bytes: a new view after the memory grew (the old one is detached). */
  private bytes(): Buffer {
    if (this.view.buffer !== this.wasm.memory.buffer) this.view = Buffer.from(this.wasm.memory.buffer);
    return this.view;
  }

  /** The page's rows, each with its review comments (by drive id, `ids[i]` row i's), appended to `json` and `csv`. */
  renderPage(
    rows: PageRows,
    ids: readonly number[],
    comments: ReadonlyMap<number, CommentRow[]>,
    json: PageBytes,
    csv: PageBytes,
  ): void {
    if (!rows.length) return;
    const first = rows.rowStart(0);
    const length = rows.rowEnd(rows.length - 1) - first;
    this.rows.fit(length);
    this.bytes().set(rows.bytes.subarray(first, first + length), this.rows.at);
    const offset = this.rows.at - first;
    let jsonAt = this.json.at;
    let csvAt = this.csv.at;
    const flush = () => {
      const memory = this.bytes();
      json.writeBytes(memory.subarray(this.json.at, jsonAt));
      csv.writeBytes(memory.subarray(this.csv.at, csvAt));
      jsonAt = this.json.at;
      csvAt = this.csv.at;
    };
    for (let i = 0; i < rows.length; i++) {
      const start = rows.rowStart(i);
      const end = rows.rowEnd(i);
      const drive = comments.get(ids[i]!);
      let jsonComments = 0;
      let jsonCommentsLength = 0;
      let csvComments = 0;
      let csvCommentsLength = 0;
      if (drive?.length) {
        const commentsJson = reviewCommentsJson(drive);
        const commentsCsv = csvField(reviewCommentsText(drive));
        this.comments.fit((commentsJson.length + commentsCsv.length) * 3);
        const memory = this.bytes();
        jsonComments = this.comments.at;
        jsonCommentsLength = memory.write(commentsJson, jsonComments);
        csvComments = jsonComments + jsonCommentsLength;
        csvCommentsLength = memory.write(commentsCsv, csvComments);
      }
      // Every input byte gives at most 6 (a control character's \u00xx), the lines' own text stays within 2048.
      const jsonRoom = (end - start) * 6 + 2048 + jsonCommentsLength;
      const csvRoom = (end - start) * 2 + 1024 + csvCommentsLength;
      if (jsonAt + jsonRoom > this.json.at + this.json.capacity || csvAt + csvRoom > this.csv.at + this.csv.capacity) {
        flush();
        this.json.fit(jsonRoom);
        this.csv.fit(csvRoom);
        jsonAt = this.json.at;
        csvAt = this.csv.at;
      }
      const taken = this.wasm.render(
        start + offset,
        end + offset,
        jsonAt,
        csvAt,
        jsonComments,
        jsonCommentsLength,
        csvComments,
        csvCommentsLength,
      );
      if (taken) {
        jsonAt = this.wasm.jsonEnd.value;
        csvAt = this.wasm.csvEnd.value;
        continue;
      }
      this.refusedRows++;
      flush();
      const lines = exportedDriveLines(rows.row(i), drive ?? NO_COMMENTS);
      json.write(lines.json);
      csv.write(lines.csv);
    }
    flush();
  }
}

const NO_COMMENTS: CommentRow[] = [];
