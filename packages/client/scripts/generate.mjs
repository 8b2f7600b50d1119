#!/usr/bin/env node
// The client's types come from the gateway's committed OpenAPI document (gateway/openapi.json, the one it serves at
// /openapi.json and checks against its code in its own lint): this writes openapi-typescript's types to
// src/generated/api.ts. `--check` (part of `npm run lint`, so of `npm test`) fails when the committed types differ
// from what the document gives now. Reading the file, not the gateway's code, keeps the client free of the gateway.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const doc = JSON.parse(readFileSync(join(root, '..', '..', 'gateway', 'openapi.json'), 'utf8'));
const file = 'src/generated/api.ts';
const text = COMMENT_HEADER + astToString(await openapiTS(doc, { alphabetize: false, silent: true }));

if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(join(root, file), 'utf8');
  } catch {
    // missing: drifted
  }
  if (committed !== text) {
    console.error(
      `packages/client/${file} drifted from gateway/openapi.json (run \`npm run generate -w @mileage/client\` and commit)`,
    );
    process.exit(1);
  }
  console.log(`packages/client/${file} matches gateway/openapi.json`);
} else {
  mkdirSync(dirname(join(root, file)), { recursive: true });
  writeFileSync(join(root, file), text);
  console.log(`wrote ${file}`);
}
