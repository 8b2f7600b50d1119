#!/usr/bin/env node
// The OpenAPI document the gateway serves at /openapi.json, committed as openapi.json: the contract that
// packages/client generates its types from (without depending on the gateway). `--check` (part of the gateway's
// `npm run lint`, so of `npm test`) fails when the committed file differs from what the built gateway generates.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const file = join(dirname(fileURLToPath(import.meta.url)), '..', 'openapi.json');
let openApiDocument;
try {
  ({ openApiDocument } = createRequire(import.meta.url)('../dist/openapi.js'));
} catch (err) {
  console.error(`cannot load the gateway's OpenAPI generator (run \`npm run build\` first): ${err.message}`);
  process.exit(1);
}
// The issuer only names the OAuth endpoints in the document; the development default keeps the output stable.
const text = `${JSON.stringify(openApiDocument({ issuer: 'http://127.0.0.1:8081/realms/mileage' }), null, 2)}\n`;

if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(file, 'utf8');
  } catch {
    // missing: drifted
  }
  if (committed !== text) {
    console.error(
      'gateway/openapi.json differs from the document the gateway generates (run `npm run openapi -w @mileage/gateway`, then `npm run generate -w @mileage/client`, and commit both)',
    );
    process.exit(1);
  }
  console.log('gateway/openapi.json matches the generated document');
} else {
  writeFileSync(file, text);
  console.log('wrote gateway/openapi.json');
}
