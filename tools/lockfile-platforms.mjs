#!/usr/bin/env node
// The registry reachable from this workplace does not serve turbo's macOS and Windows binaries, so `npm install`
// leaves them out of package-lock.json and `npm ci` then refuses the lock as out of sync. This adds their
// (never-installed-here) optional entries back, as a lock written elsewhere would have them. Run after `npm install`.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const turbo = lock.packages['node_modules/turbo'];
const missing = {
  'darwin-64': { cpu: ['x64'], os: ['darwin'] },
  'darwin-arm64': { cpu: ['arm64'], os: ['darwin'] },
  'windows-64': { cpu: ['x64'], os: ['win32'] },
  'windows-arm64': { cpu: ['arm64'], os: ['win32'] },
};
let added = 0;
for (const [name, platform] of Object.entries(missing)) {
  const key = `node_modules/@turbo/${name}`;
  if (lock.packages[key]) continue;
  lock.packages[key] = { version: turbo.version, ...platform, dev: true, license: 'MIT', optional: true };
  added++;
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`package-lock.json: ${added} platform entries added`);
