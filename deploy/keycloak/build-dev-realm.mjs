#!/usr/bin/env node
// Writes the development realm: realm-mileage.json plus dev-overlay.json (the mileage-dev client and the demo users).
// Usage: node build-dev-realm.mjs <output file>
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const realm = JSON.parse(readFileSync(join(here, 'realm-mileage.json'), 'utf8'));
const { about: _about, ...overlay } = JSON.parse(readFileSync(join(here, 'dev-overlay.json'), 'utf8'));
for (const [key, value] of Object.entries(overlay)) {
  realm[key] = Array.isArray(value) ? [...(realm[key] ?? []), ...value] : { ...(realm[key] ?? {}), ...value };
}
const out = process.argv[2];
if (!out) {
  console.error('usage: build-dev-realm.mjs <output file>');
  process.exit(2);
}
writeFileSync(out, JSON.stringify(realm, null, 2) + '\n');
