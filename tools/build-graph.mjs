#!/usr/bin/env node
// Turborepo orders the builds by the workspaces' package.json dependencies, while each `tsc -b` also builds the
// projects its tsconfig references. A reference without the dependency lets two builds write the same dist/ at once,
// and Turborepo may cache a file half written (a 0-byte generated module once failed CI this way). Fails on any such
// reference; run before the build (npm test).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/** The workspace that owns a folder: the nearest package.json at or above it, below the root. */
function owner(folder) {
  for (let dir = folder; dir.startsWith(root) && dir !== root; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) return { dir, manifest: readJson(manifest) };
  }
  return undefined;
}

const problems = [];
const tsconfigs = execFileSync('git', ['ls-files', '*tsconfig.json'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter(Boolean);
for (const file of tsconfigs) {
  const folder = path.dirname(path.join(root, file));
  const from = owner(folder);
  if (!from) continue; // the root's solution file: builds everything, in no workspace's task
  const declared = { ...from.manifest.dependencies, ...from.manifest.devDependencies };
  for (const reference of readJson(path.join(root, file)).references ?? []) {
    const to = owner(path.resolve(folder, reference.path));
    if (!to || to.dir === from.dir) continue;
    if (!(to.manifest.name in declared))
      problems.push(`${file} references ${to.manifest.name}, which ${from.manifest.name}'s package.json does not list`);
  }
}
if (problems.length) {
  console.error(`Build graph: a tsconfig reference without its package dependency:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`build graph: every tsconfig reference is a declared dependency (${tsconfigs.length} tsconfig files)`);
