// The WebAssembly renderer's facts (assembly/export-render-facts.ts) as the TypeScript states them: a fact changed in
// the TypeScript and not generated again fails here, before the two renderers disagree over a row.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { EXPORT_RENDER_FACTS_FILE, exportRenderFactsSource } from './export-render-facts';

test('assembly/export-render-facts.ts is what the TypeScript generates', async () => {
  assert.equal(
    readFileSync(EXPORT_RENDER_FACTS_FILE, 'utf8'),
    await exportRenderFactsSource(),
    'assembly/export-render-facts.ts is stale: run `npm run generate`',
  );
});
