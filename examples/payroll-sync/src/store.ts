import type { ReportedDrive, ReportedDriveTombstone, SyncState, SyncTarget } from '@mileage/client';
import { stringify } from 'csv-stringify/sync';
import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync, closeSync, fsyncSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/** The CSV's columns, in order. Amounts are in the currency's major unit (all contract currencies have 2 decimals). */
export const COLUMNS = [
  'drive_id',
  'driver_id',
  'driver_name',
  'driver_email',
  'status',
  'started_at',
  'ended_at',
  'from',
  'to',
  'distance',
  'distance_units',
  'business_distance',
  'value',
  'value_currency',
  'toll_fees',
  'toll_fees_currency',
  'parking_fees',
  'parking_fees_currency',
  'entry',
  'classification',
  'purpose',
  'notes',
  'reported',
  'modified',
] as const;
export type Row = Record<(typeof COLUMNS)[number], string>;

interface StoredState {
  version: 1;
  groupId: string;
  sync: SyncState;
  rows: Record<string, Row>;
  /**
   * Drives removed by a webhook event before the feed showed it: id → the deletion's `modified`. A listing of an older
   * version of such a drive (the feed had not caught up yet) is not put back. Dropped once the watermark passes it.
   */
  removed: Record<string, string>;
}

const money = (m: { amount: number; currency: string } | null): [string, string] =>
  m ? [(m.amount / 100).toFixed(2), m.currency] : ['', ''];

export function toRow(d: ReportedDrive): Row {
  const x = d.details;
  const [value, valueCurrency] = money(x.value);
  const [tolls, tollsCurrency] = money(x.toll_fees);
  const [parking, parkingCurrency] = money(x.parking_fees);
  const discounted = x.distance?.discounted;
  return {
    drive_id: d.id,
    driver_id: d.driver.id,
    driver_name: d.driver.name ?? '',
    driver_email: d.driver.email ?? '',
    status: d.status,
    started_at: x.start?.time ?? '',
    ended_at: x.end?.time ?? '',
    from: x.start?.name ?? '',
    to: x.end?.name ?? '',
    distance: x.distance ? String(x.distance.amount) : '',
    distance_units: x.distance?.units ?? '',
    business_distance: x.distance ? String(discounted ?? x.distance.amount) : '',
    value,
    value_currency: valueCurrency,
    toll_fees: tolls,
    toll_fees_currency: tollsCurrency,
    parking_fees: parking,
    parking_fees_currency: parkingCurrency,
    entry: x.entry,
    classification: x.classification ?? '',
    purpose: x.purpose ?? '',
    notes: x.description ?? '',
    reported: d.created,
    modified: d.modified,
  };
}

/** Writes `text` to `file` through a temporary file in the same folder and a rename: readers see old or new, whole. */
export function writeAtomically(file: string, text: string): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeFileSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  // The rename itself survives a crash once the folder is synced.
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

const readText = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
};

/**
 * The export's state file (the sync state and the rows) and the CSV rendered from it. The CSV is a function of the
 * rows, and is written (atomically) only when its bytes change, so a run with nothing new touches no file.
 */
export class PayrollStore {
  private state: StoredState;
  /** What the last save wrote. */
  lastSave = { csvChanged: false, stateChanged: false };

  constructor(
    readonly csvFile: string,
    readonly stateFile: string,
    readonly groupId: string,
  ) {
    const text = readText(stateFile);
    const fresh: StoredState = { version: 1, groupId, sync: { version: 1, watermark: null }, rows: {}, removed: {} };
    this.state = text === undefined ? fresh : (JSON.parse(text) as StoredState);
    if (this.state.version !== 1) throw new Error(`${stateFile}: unknown state version ${String(this.state.version)}`);
    if (this.state.groupId !== groupId)
      throw new Error(`${stateFile} holds group ${this.state.groupId}, not ${groupId}: use another PAYROLL_STATE`);
  }

  get syncState(): SyncState {
    return this.state.sync;
  }

  get rows(): Row[] {
    return Object.values(this.state.rows).sort((a, b) => Number(a.drive_id) - Number(b.drive_id));
  }

  csv(): string {
    // escape_formulas: a driver's notes starting with =, +, - or @ stay text in a spreadsheet (CSV injection).
    return stringify(
      this.rows.map((r) => COLUMNS.map((c) => r[c])),
      { header: true, columns: [...COLUMNS], escape_formulas: true, record_delimiter: 'unix' },
    );
  }

  /**
   * The SyncTarget a sync walk writes into. It works on a copy: only `commit` makes the walk's changes the store's
   * (and writes the CSV, then the state), so a walk that fails half-way (after a reset, say) leaves the store as it was.
   */
  target(): SyncTarget<ReportedDrive, ReportedDriveTombstone> {
    const staged: StoredState = structuredClone(this.state);
    return {
      reset: () => {
        staged.rows = {};
      },
      upsert: (id, item) => {
        const removedAt = staged.removed[id];
        if (removedAt !== undefined && Date.parse(item.modified) <= Date.parse(removedAt)) return;
        delete staged.removed[id];
        staged.rows[id] = toRow(item);
      },
      remove: (id) => {
        delete staged.rows[id];
      },
      commit: (sync) => {
        staged.sync = sync;
        const mark = sync.watermark === null ? NaN : Date.parse(sync.watermark);
        for (const [id, at] of Object.entries(staged.removed)) if (Date.parse(at) <= mark) delete staged.removed[id];
        this.state = staged;
        this.save();
      },
    };
  }

  /** A deletion or withdrawal told by a webhook, applied at once unless the row is newer than it; true if removed. */
  removeFromEvent(id: string, modified: string): boolean {
    const row = this.state.rows[id];
    if (row && Date.parse(row.modified) > Date.parse(modified)) return false;
    const watermark = this.state.sync.watermark;
    if (watermark === null || Date.parse(modified) > Date.parse(watermark)) this.state.removed[id] = modified;
    delete this.state.rows[id];
    this.save();
    return row !== undefined;
  }

  /** Writes what changed: the CSV first (it is derived from the rows, so a crash in between is repaired next run). */
  save(): { csvChanged: boolean; stateChanged: boolean } {
    const csv = this.csv();
    const csvChanged = readText(this.csvFile) !== csv;
    if (csvChanged) writeAtomically(this.csvFile, csv);
    const json = `${JSON.stringify(this.state, null, 1)}\n`;
    const stateChanged = readText(this.stateFile) !== json;
    if (stateChanged) writeAtomically(this.stateFile, json);
    this.lastSave = { csvChanged, stateChanged };
    return this.lastSave;
  }
}
