// enterOwnCpuGroup against a cgroup tree of plain folders: where it moves the process, and where it leaves it be.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { type CpuGroupPaths, enterOwnCpuGroup } from './cpu-group';

const made: string[] = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A machine's files as enterOwnCpuGroup reads them: a v1 `cpu` hierarchy, or a v2 tree with its controllers. */
function machine(options: { autogroup?: string; selfCgroup: string; v2?: string }): CpuGroupPaths {
  const dir = mkdtempSync(path.join(tmpdir(), 'cpu-group-'));
  made.push(dir);
  const root = path.join(dir, 'cgroup');
  if (options.v2 === undefined) {
    mkdirSync(path.join(root, 'cpu'), { recursive: true });
    writeFileSync(path.join(root, 'cpu', 'cgroup.procs'), '');
  } else {
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(root, 'cgroup.procs'), '');
    writeFileSync(path.join(root, 'cgroup.controllers'), options.v2);
  }
  const autogroup = path.join(dir, 'autogroup');
  if (options.autogroup !== undefined) writeFileSync(autogroup, options.autogroup);
  const selfCgroup = path.join(dir, 'self-cgroup');
  writeFileSync(selfCgroup, options.selfCgroup);
  return { root, autogroup, selfCgroup };
}

const V1_ROOT = '9:name=systemd:/\n2:cpuacct:/\n1:cpu:/\n0::/\n';

test('with autogroup on and the process in the root cgroup (v1), it moves into a cgroup of its own', () => {
  const paths = machine({ autogroup: '1\n', selfCgroup: V1_ROOT });
  const group = enterOwnCpuGroup('bench', paths);
  assert.equal(group.folder, path.join(paths.root, 'cpu', `bench-${process.pid}`));
  assert.equal(readFileSync(path.join(group.folder, 'cgroup.procs'), 'utf8'), String(process.pid));
  assert.match(group.note, /CPU cgroup bench-\d+ \(autogroup does not apply there/);
  group.leave();
  // Moved back to the root of the hierarchy.
  assert.equal(readFileSync(path.join(paths.root, 'cpu', 'cgroup.procs'), 'utf8'), String(process.pid));
});

test('on a unified (v2) tree with the cpu controller, the cgroup is made at its root', () => {
  const paths = machine({ autogroup: '1', selfCgroup: '0::/\n', v2: 'cpuset cpu io memory pids' });
  const group = enterOwnCpuGroup('bench', paths);
  assert.equal(group.folder, path.join(paths.root, `bench-${process.pid}`));
});

test('it leaves the process be where autogroup does not apply to it, and says why', () => {
  const cases: [Parameters<typeof machine>[0], RegExp][] = [
    [{ autogroup: '0', selfCgroup: V1_ROOT }, /autogroup is off/],
    [{ selfCgroup: V1_ROOT }, /no autogroup here/],
    [{ autogroup: '1', selfCgroup: '1:cpu:/kubepods/pod1\n' }, /in the CPU cgroup \/kubepods\/pod1, where autogroup/],
    [{ autogroup: '1', selfCgroup: '0::/\n', v2: 'memory pids' }, /no CPU cgroup hierarchy/],
  ];
  for (const [options, note] of cases) {
    const group = enterOwnCpuGroup('bench', machine(options));
    assert.equal(group.folder, undefined);
    assert.match(group.note, note);
    group.leave();
  }
});

test('a cgroup it may not make leaves the process be, with the reason', () => {
  const paths = machine({ autogroup: '1', selfCgroup: V1_ROOT });
  // A file where the cgroup's folder would go: mkdir fails as a refused cgroup would.
  writeFileSync(path.join(paths.root, 'cpu', `bench-${process.pid}`), '');
  const group = enterOwnCpuGroup('bench', paths);
  assert.equal(group.folder, undefined);
  assert.match(group.note, /no CPU cgroup of our own \(EEXIST\)/);
});
