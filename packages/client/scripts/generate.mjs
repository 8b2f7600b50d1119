#!/usr/bin/env node
// The client's types come from the gateway's own OpenAPI document (the one it serves at /openapi.json): this writes
// the document to openapi.json and openapi-typescript's types to src/generated/api.ts. `--check` (part of
// `npm run lint`, so of `npm test`) fails when either committed file differs from what the gateway generates now.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
let openApiDocument;
try {
  ({ openApiDocument } = require('@mileage/gateway'));
} catch (err) {
  console.error(`cannot load the gateway's OpenAPI generator (run \`npm run build\` first): ${err.message}`);
  process.exit(1);
}

// The issuer only names the OAuth endpoints in the document; the development default keeps the output stable.
const doc = openApiDocument({ issuer: 'http://127.0.0.1:8081/realms/mileage' });
const files = {
  'openapi.json': `${JSON.stringify(doc, null, 2)}\n`,
  'src/generated/api.ts': COMMENT_HEADER + astToString(await openapiTS(doc, { alphabetize: false, silent: true })),
};

if (process.argv.includes('--check')) {
  const drifted = Object.entries(files).filter(([file, text]) => {
    try {
      return readFileSync(join(root, file), 'utf8') !== text;
    } catch {
      return true;
    }
  });
  if (drifted.length) {
    console.error(
      `packages/client drifted from the gateway's OpenAPI document (run \`npm run generate -w @mileage/client\` and commit):\n  ${drifted.map(([f]) => f).join('\n  ')}`,
    );
    process.exit(1);
  }
  console.log(`packages/client matches the gateway's OpenAPI document (${Object.keys(files).join(', ')})`);
} else {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  console.log(`wrote ${Object.keys(files).join(', ')}`);
}
