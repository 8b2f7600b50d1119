// A pinned PyPI tool in a virtualenv of its own under ~/.cache/mileage-tools, made on first use: the one way the
// suites that drive Python tools (scim2-tester, schemathesis) install them.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';

/**
 * The path of `binary` from `requirement` (e.g. "schemathesis==4.32.5"), installed into `venvName` when missing.
 * @param {{ requirement: string, venvName: string, binary: string }} tool
 */
export function pythonTool({ requirement, venvName, binary }) {
  const cache = path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'mileage-tools');
  const venv = path.join(cache, venvName);
  const bin = path.join(venv, 'bin', binary);
  if (existsSync(bin)) return bin;
  mkdirSync(cache, { recursive: true });
  for (const [cmd, args] of [
    ['python3', ['-m', 'venv', venv]],
    [path.join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', requirement]],
  ]) {
    const r = spawnSync(cmd, args, { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.error?.message})`);
  }
  return bin;
}
