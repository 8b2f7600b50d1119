import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import {
  archiveGaps,
  chooseBackup,
  lsnToBigInt,
  parseWalName,
  RestoreRefused,
  segmentEndLsn,
  WalArchive,
  walName,
  type BackupManifest,
} from './archive';

const backup = (label: string, stopTime: string): BackupManifest => ({
  label,
  timeline: 1,
  startWal: '000000010000000000000002',
  stopWal: '000000010000000000000002',
  stopTime,
  files: {},
});
const NOW = new Date('2026-11-28T12:00:00Z');
const BACKUPS = [backup('monday', '2026-11-23T01:00:00Z'), backup('friday', '2026-11-27T01:00:00Z')];

describe('chooseBackup', () => {
  test('the newest backup consistent by the target', () => {
    assert.equal(chooseBackup(BACKUPS, new Date('2026-11-28T11:00:00Z'), NOW).label, 'friday');
    assert.equal(chooseBackup(BACKUPS, new Date('2026-11-26T00:00:00Z'), NOW).label, 'monday');
  });

  test('a target before the first backup is refused, naming the earliest point that can be restored', () => {
    assert.throws(
      () => chooseBackup(BACKUPS, new Date('2026-11-22T00:00:00Z'), NOW),
      (err: Error) =>
        err instanceof RestoreRefused &&
        /before the first backup was consistent/.test(err.message) &&
        err.message.includes('2026-11-23T01:00:00Z'),
    );
  });

  test('a target in the future, a target that is no time and an empty repository are refused', () => {
    assert.throws(() => chooseBackup(BACKUPS, new Date('2026-11-28T12:00:01Z'), NOW), /in the future/);
    assert.throws(() => chooseBackup(BACKUPS, new Date('not a time'), NOW), /not a time/);
    assert.throws(() => chooseBackup([], new Date('2026-11-28T11:00:00Z'), NOW), /holds no base backup/);
  });
});

describe('WAL names and positions', () => {
  test('a segment name round-trips, and its end is where the next segment starts', () => {
    assert.deepEqual(parseWalName('0000000200000001000000FF'), { timeline: 2, segment: 511 });
    assert.equal(walName(2, 511), '0000000200000001000000FF');
    assert.equal(walName(1, 256), '000000010000000100000000');
    assert.equal(segmentEndLsn('000000010000000000000003'), lsnToBigInt('0/4000000'));
    assert.equal(lsnToBigInt('16/B374D848'), 0x16b374d848n);
    assert.equal(parseWalName('00000002.history'), undefined);
  });

  test('archiveGaps names the segments missing from a backup’s first one to the newest, on its timeline only', () => {
    const archived = ['000000010000000000000002', '000000010000000000000004', '000000020000000000000009'];
    assert.deepEqual(archiveGaps(archived, 1, '000000010000000000000002'), ['000000010000000000000003']);
    assert.deepEqual(archiveGaps([...archived, '000000010000000000000003'], 1, '000000010000000000000002'), []);
    assert.deepEqual(archiveGaps([], 1, '000000010000000000000002'), ['000000010000000000000002']);
  });
});

describe('WalArchive', () => {
  test('a restore is refused before anything is copied when the repository cannot reach the target', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'drill-archive-'));
    try {
      const archive = new WalArchive(root, undefined);
      assert.throws(
        () => archive.prepareRestore(new Date('2026-11-28T11:00:00Z'), path.join(root, 'into'), NOW),
        /no base backup/,
      );
      assert.match(archive.archiveCommand(), /%p/);
      assert.deepEqual(archive.archived(), []);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
