// A bench's processes in a CPU cgroup of their own, as a container runtime places a service's: Linux's autogroup
// (kernel.sched_autogroup_enabled, on by default) schedules each session of the root cgroup as one group of equal
// weight, and PostgreSQL starts every backend in a session of its own (setsid). Left there, each backend, the bench's
// COPY or the export's reading, weighs as much as every Node.js process of the stack together, and a thread in the idle
// class yields to the threads of its own group only, not to the backends answering other requests. Inside any cgroup
// but the root, autogroup does not apply (docs/benchmarks.md, "An organization exported", measures both).
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/** How a bench's processes are scheduled: in a cgroup of their own, or as the machine's sessions (autogroup). */
export interface CpuGroup {
  /** One line for the bench's output. */
  note: string;
  /** The cgroup's folder, or undefined where the processes stay where they were. */
  folder?: string;
  /** Moves this process back to where it was and removes the cgroup (its children are gone by then). */
  leave(): void;
}

/** Where the kernel says what enterOwnCpuGroup reads (tests give their own). */
export interface CpuGroupPaths {
  /** The cgroup filesystem's mount point. */
  root: string;
  /** kernel.sched_autogroup_enabled. */
  autogroup: string;
  /** This process's cgroups, cgroups(7)'s /proc/[pid]/cgroup. */
  selfCgroup: string;
}

const MACHINE: CpuGroupPaths = {
  root: '/sys/fs/cgroup',
  autogroup: '/proc/sys/kernel/sched_autogroup_enabled',
  selfCgroup: '/proc/self/cgroup',
};

/** This process's cgroup in the CPU hierarchy: v1's line naming the `cpu` controller, else v2's `0::` line. */
function ownCpuCgroup(selfCgroup: string): string | undefined {
  const lines = readFileSync(selfCgroup, 'utf8').split('\n').filter(Boolean);
  const entries = lines.map((line) => {
    const [, controllers = '', ...rest] = line.split(':');
    return { controllers: controllers.split(','), path: rest.join(':') };
  });
  return (entries.find((e) => e.controllers.includes('cpu')) ?? entries.find((e) => e.controllers.join() === ''))?.path;
}

/** The CPU controller's hierarchy: cgroup v1's `cpu` mount, or the unified v2 tree where it has the controller. */
function cpuHierarchy(root: string): string | undefined {
  const v1 = path.join(root, 'cpu');
  if (existsSync(path.join(v1, 'cgroup.procs'))) return v1;
  const controllers = path.join(root, 'cgroup.controllers');
  if (existsSync(controllers) && readFileSync(controllers, 'utf8').split(/\s+/).includes('cpu')) return root;
  return undefined;
}

/**
 * Puts this process (and so every process it starts from now on) in a new CPU cgroup named after `name` and its pid,
 * below the root of the CPU hierarchy, where autogroup applies to it (on, and this process in the root cgroup) and that
 * can be done (root, a writable hierarchy). Otherwise nothing moves, and the note says why.
 */
export function enterOwnCpuGroup(name: string, paths: CpuGroupPaths = MACHINE): CpuGroup {
  const stay = (note: string): CpuGroup => ({ note, leave() {} });
  let autogroup = false;
  let current: string | undefined;
  try {
    autogroup = readFileSync(paths.autogroup, 'utf8').trim() === '1';
    current = ownCpuCgroup(paths.selfCgroup);
  } catch {
    return stay('processes scheduled as the machine has them (no autogroup here)');
  }
  if (!autogroup) return stay("processes scheduled as the machine has them (the kernel's autogroup is off)");
  if (current !== '/')
    return stay(`processes in the CPU cgroup ${current ?? '(unknown)'}, where autogroup does not apply`);
  const hierarchy = cpuHierarchy(paths.root);
  if (!hierarchy)
    return stay('autogroup on and no CPU cgroup hierarchy: each PostgreSQL backend is a group of its own');
  const folder = path.join(hierarchy, `${name}-${process.pid}`);
  try {
    mkdirSync(folder);
    writeFileSync(path.join(folder, 'cgroup.procs'), String(process.pid));
  } catch (err) {
    try {
      rmdirSync(folder);
    } catch {
      // Not made, or not a cgroup's folder.
    }
    const reason = err instanceof Error && 'code' in err ? String(err.code) : 'refused';
    return stay(`autogroup on and no CPU cgroup of our own (${reason}): each PostgreSQL backend is a group of its own`);
  }
  return {
    note: `every process in the CPU cgroup ${path.basename(folder)} (autogroup does not apply there, as in a container)`,
    folder,
    leave() {
      try {
        writeFileSync(path.join(hierarchy, 'cgroup.procs'), String(process.pid));
        rmdirSync(folder);
      } catch {
        // A process of the bench's still in it (rmdir refuses a cgroup with tasks): the folder is left behind.
      }
    },
  };
}
