#!/usr/bin/env node
// Fails when the committed generated code differs from what `buf generate` produces now.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'proto-drift-'));
try {
  execFileSync('buf', ['generate', '-o', tmp], { cwd: root, stdio: 'inherit' });
  const list = (dir) =>
    fs
      .readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => path.relative(dir, path.join(e.parentPath ?? e.path, e.name)))
      .sort();
  const committed = list(path.join(root, 'gen'));
  const fresh = list(path.join(tmp, 'gen'));
  const problems = [];
  for (const f of new Set([...committed, ...fresh])) {
    const a = path.join(root, 'gen', f);
    const b = path.join(tmp, 'gen', f);
    if (!fs.existsSync(a)) problems.push(`missing from proto/gen: ${f}`);
    else if (!fs.existsSync(b)) problems.push(`stale file in proto/gen: ${f}`);
    else if (!fs.readFileSync(a).equals(fs.readFileSync(b))) problems.push(`differs: ${f}`);
  }
  if (problems.length) {
    console.error(
      `Generated code drifted from proto/ (run \`npm run generate\` and commit):\n  ${problems.join('\n  ')}`,
    );
    process.exit(1);
  }
  console.log(`proto/gen matches buf generate (${committed.length} files)`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
