// A page of the export's COPY rows rendered into its JSON Lines and CSV by the WebAssembly renderer
// (assembly/export-render.ts, built into dist/export-render.wasm): the rows and their review comments (COPY rows too)
// are copied into its memory once a page, it writes both lines of each drive there, and the lines are copied out into
// the pages' buffers. A row it refuses (a field outside its forms) is rendered by exportedDriveLines, in its place;
// comments it refuses, by reviewCommentsJson and reviewCommentsText.
import { type BinaryRows, CopiedRows, type PageBytes } from '@mileage/runtime/worker';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { commentOfFields, exportedDriveLines, reviewCommentsJson, reviewCommentsText } from './export-lines';
import { csvField } from './csv';

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
  renderComments(start: number, end: number, json: number, csv: number): number;
  textFromBinary(start: number, end: number, out: number, fields: number, kinds: number): number;
  reserve(bytes: number): number;
  jsonEnd: { value: number };
  csvEnd: { value: number };
  commentsJsonEnd: { value: number };
  commentsCsvEnd: { value: number };
  textEnd: { value: number };
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
/** And of its review comments' (EXPORT_COMMENT_COLUMNS, each drive's one after the other): the drive id first. */
export type PageComments = PageRows & Pick<CopiedRows, 'firstInteger'>;

/** The renderer's instance, in the thread that renders (export-pages.ts): its memory is reused page after page. */
export class ExportRenderer {
  /** Rows refused by the WebAssembly renderer and rendered by exportedDriveLines instead. */
  refusedRows = 0;
  /** Drives whose comments it refused, rendered by reviewCommentsJson and reviewCommentsText instead. */
  refusedComments = 0;
  /** Pages of binary rows it did not write as text (textRows), read in text instead. */
  refusedBinaryPages = 0;
  private readonly wasm: RendererExports;
  private view: Buffer;
  private readonly rows: Region;
  private readonly json: Region;
  private readonly csv: Region;
  private readonly comments: Region;
  private readonly commentRows: Region;
  private readonly binaryRows: Region;
  private readonly textOfBinary: Region;

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
    this.commentRows = new Region(this.wasm);
    this.binaryRows = new Region(this.wasm);
    this.textOfBinary = new Region(this.wasm);
    this.json.fit(1024 * 1024);
    this.csv.fit(512 * 1024);
  }

  /** The memory as bytes: a new view after the memory grew (the old one is detached). */
  private bytes(): Buffer {
    if (this.view.buffer !== this.wasm.memory.buffer) this.view = Buffer.from(this.wasm.memory.buffer);
    return this.view;
  }

  /**
   * A page of binary COPY rows whose columns are of `kinds` (binaryKinds) as COPY's text of the same rows, written into
   * `into` (emptied first); undefined for a page holding a value the renderer does not write (textFromBinary), which is
   * then read in text.
   */
  textRows(binary: BinaryRows, kinds: Uint8Array, into: PageBytes): CopiedRows | undefined {
    const length = binary.bytes.length;
    this.binaryRows.fit(length + kinds.length);
    // A byte gives at most 2 (an escape); any value at most 72 more than its bytes (a time's 8 bytes 29, an int8's 20,
    // a numeric's at most 64 and 4 written past it), with its tab or newline.
    this.textOfBinary.fit(length * 2 + binary.length * kinds.length * 72 + 16);
    const memory = this.bytes();
    memory.set(binary.bytes, this.binaryRows.at);
    const kindsAt = this.binaryRows.at + length;
    memory.set(kinds, kindsAt);
    const at = this.textOfBinary.at;
    if (!this.wasm.textFromBinary(this.binaryRows.at, kindsAt, at, kinds.length, kindsAt)) {
      this.refusedBinaryPages++;
      return undefined;
    }
    into.clear();
    into.writeBytes(this.bytes().subarray(at, this.wasm.textEnd.value));
    const bytes = into.take();
    const ends: number[] = [];
    // A newline inside a value is escaped: each one ends a row.
    for (let end = bytes.indexOf(10); end >= 0; end = bytes.indexOf(10, end + 1)) ends.push(end);
    return new CopiedRows(bytes, ends);
  }

  /**
   * The page's rows, each with its review comments (`comments`' rows of drive `ids[i]`, row i's), appended to `json`
   * and `csv`.
   */
  renderPage(
    rows: PageRows,
    ids: readonly number[],
    comments: PageComments | undefined,
    json: PageBytes,
    csv: PageBytes,
  ): void {
    if (!rows.length) return;
    const first = rows.rowStart(0);
    const length = rows.rowEnd(rows.length - 1) - first;
    this.rows.fit(length);
    const commentsFirst = comments?.length ? comments.rowStart(0) : 0;
    const commentsLength = comments?.length ? comments.rowEnd(comments.length - 1) + 1 - commentsFirst : 0;
    this.commentRows.fit(commentsLength);
    this.bytes().set(rows.bytes.subarray(first, first + length), this.rows.at);
    if (commentsLength)
      this.bytes().set(comments!.bytes.subarray(commentsFirst, commentsFirst + commentsLength), this.commentRows.at);
    const offset = this.rows.at - first;
    const commentsOffset = this.commentRows.at - commentsFirst;
    let jsonAt = this.json.at;
    let csvAt = this.csv.at;
    const flush = () => {
      const memory = this.bytes();
      json.writeBytes(memory.subarray(this.json.at, jsonAt));
      csv.writeBytes(memory.subarray(this.csv.at, csvAt));
      jsonAt = this.json.at;
      csvAt = this.csv.at;
    };
    const commentCount = comments?.length ?? 0;
    let nextComment = 0;
    for (let i = 0; i < rows.length; i++) {
      const start = rows.rowStart(i);
      const end = rows.rowEnd(i);
      // The drive's comments: the rows of its id, in the drives' order as the page's are.
      while (nextComment < commentCount && comments!.firstInteger(nextComment) < ids[i]!) nextComment++;
      const firstComment = nextComment;
      while (nextComment < commentCount && comments!.firstInteger(nextComment) === ids[i]) nextComment++;
      const driveComments = () =>
        Array.from({ length: nextComment - firstComment }, (_, k) => commentOfFields(comments!.row(firstComment + k)));
      let jsonComments = 0;
      let jsonCommentsLength = 0;
      let csvComments = 0;
      let csvCommentsLength = 0;
      if (nextComment > firstComment) {
        const commentsStart = comments!.rowStart(firstComment) + commentsOffset;
        const commentsEnd = comments!.rowEnd(nextComment - 1) + 1 + commentsOffset;
        // Every input byte gives at most 6 in the JSON (a control character's \u00xx) and 2 in the CSV, each comment's
        // own text stays within 128.
        const count = nextComment - firstComment;
        const jsonRoom = (commentsEnd - commentsStart) * 6 + count * 128 + 16;
        this.comments.fit(jsonRoom + (commentsEnd - commentsStart) * 2 + count * 8 + 16);
        jsonComments = this.comments.at;
        csvComments = jsonComments + jsonRoom;
        if (this.wasm.renderComments(commentsStart, commentsEnd, jsonComments, csvComments)) {
          jsonCommentsLength = this.wasm.commentsJsonEnd.value - jsonComments;
          csvCommentsLength = this.wasm.commentsCsvEnd.value - csvComments;
        } else {
          this.refusedComments++;
          const drive = driveComments();
          const memory = this.bytes();
          jsonCommentsLength = memory.write(reviewCommentsJson(drive), jsonComments);
          csvCommentsLength = memory.write(csvField(reviewCommentsText(drive)), csvComments);
        }
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
      const lines = exportedDriveLines(rows.row(i), driveComments());
      json.write(lines.json);
      csv.write(lines.csv);
    }
    flush();
  }
}
