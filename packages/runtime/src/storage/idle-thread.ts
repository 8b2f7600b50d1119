// Linux's idle scheduling class for the calling thread: work that runs on a core only while no other thread wants it.
import { spawnSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import * as path from 'node:path';

/** SCHED_IDLE, as sched(7) numbers the policy and /proc reports it. */
export const SCHED_IDLE = 5;

/**
 * Puts the calling thread in SCHED_IDLE, by util-linux's chrt on the thread's own id (Node.js has no call for it; the
 * images have chrt, util-linux being part of every Debian system). Lowering a thread's class needs no privilege. A
 * nice value, even 19, is a weight: the thread keeps a share of a core a request thread wants, and runs out its slice
 * first; an idle-class thread gives the core up as soon as another thread wants it (sched(7): "for running very low
 * priority background jobs"). False where the class cannot be had (not Linux, no chrt): the thread keeps its nice value.
 */
export function enterIdleScheduling(): boolean {
  let thread: string;
  try {
    thread = path.basename(readlinkSync('/proc/thread-self'));
  } catch {
    return false;
  }
  const chrt = spawnSync('chrt', ['--idle', '--pid', '0', thread], { stdio: 'ignore', timeout: 5_000 });
  return chrt.status === 0 && schedulingPolicy() === SCHED_IDLE;
}

/** The calling thread's scheduling policy (field 41 of /proc/thread-self/stat); undefined where there is none. */
export function schedulingPolicy(): number | undefined {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'latin1');
    // The fields after the command's name, which is in parentheses and may hold spaces: the state is field 3.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[41 - 3]);
  } catch {
    return undefined;
  }
}
