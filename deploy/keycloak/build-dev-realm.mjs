#!/usr/bin/env node
// Builds the development realm from the one source of truth:
//   dev/realm-mileage.json = realm-mileage.json (production) + dev-overlay.json (development additions)
//
//   node build-dev-realm.mjs            write dev/realm-mileage.json
//   node build-dev-realm.mjs <file>     write <file> instead
//   node build-dev-realm.mjs --check    exit 1 when dev/realm-mileage.json is not what the sources give
//
// Merge rules: objects merge key by key; an array of objects whose items carry an identity key (clientId,
// username, name) merges an overlay item into the item with the same identity, or appends it; any other
// value of the overlay replaces the production one. The overlay's "about" is documentation and is dropped.
// Node 20, no dependencies.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const IDENTITY_KEYS = ['clientId', 'username', 'name'];

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const identityOf = (item) => (isObject(item) ? IDENTITY_KEYS.find((k) => typeof item[k] === 'string') : undefined);

function merge(base, overlay) {
  if (isObject(base) && isObject(overlay)) {
    const out = { ...base };
    for (const [key, value] of Object.entries(overlay)) out[key] = key in base ? merge(base[key], value) : value;
    return out;
  }
  if (Array.isArray(base) && Array.isArray(overlay)) {
    const out = [...base];
    for (const item of overlay) {
      const key = identityOf(item);
      const at = key === undefined ? -1 : out.findIndex((b) => isObject(b) && b[key] === item[key]);
      if (at >= 0) out[at] = merge(out[at], item);
      else out.push(item);
    }
    return out;
  }
  return overlay;
}

export function buildDevRealm() {
  const realm = JSON.parse(readFileSync(join(here, 'realm-mileage.json'), 'utf8'));
  const { about: _about, ...overlay } = JSON.parse(readFileSync(join(here, 'dev-overlay.json'), 'utf8'));
  return JSON.stringify(merge(realm, overlay), null, 2) + '\n';
}

const args = process.argv.slice(2);
const defaultOut = join(here, 'dev', 'realm-mileage.json');
const text = buildDevRealm();
if (args[0] === '--check') {
  let current = '';
  try {
    current = readFileSync(defaultOut, 'utf8');
  } catch {
    // missing: reported below
  }
  if (current !== text) {
    console.error(`${defaultOut} is out of date: run node deploy/keycloak/build-dev-realm.mjs`);
    process.exit(1);
  }
  console.log(`${defaultOut} is up to date`);
} else {
  const out = args[0] ?? defaultOut;
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, text);
}
