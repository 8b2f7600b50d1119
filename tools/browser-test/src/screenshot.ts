// `npm run docs:screenshot [-- <file>]`: the /docs console signed in as alice@example.com after "Execute" on
// GET /v1/users/me, written to docs/console.png (or <file>) with the fingerprint of the page it shows (picture.ts).
// Starts its own stack on free ports and stops it.
import { launchStack } from '@mileage/devstack';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { execute, missingChromium, openBrowser, signIn } from './console';
import { documentedExample, PICTURE, pageFingerprint, withFingerprint } from './picture';

async function main(): Promise<void> {
  const missing = missingChromium();
  if (missing) throw new Error(missing);
  const out = path.resolve(process.argv[2] ?? PICTURE);
  const stack = await launchStack();
  const browser = await openBrowser().catch(async (err: unknown) => {
    await stack.stop();
    throw err;
  });
  try {
    const { page } = browser;
    await page.goto(`${stack.gatewayUrl}/docs`);
    await page.locator('.information-container .title').waitFor();
    await signIn(page, { username: 'alice@example.com', password: 'demo' });
    const me = await execute(page, { tag: 'External API', operationId: 'getMe' });
    if (me.status !== 200) throw new Error(`GET /v1/users/me answered ${me.status} on the page`);
    assert.deepEqual(me.body, documentedExample(), 'the page answered otherwise than the documented example');
    // From the top of the page to the end of the rendered response.
    const response = await page.locator('#operations-External_API-getMe .live-responses-table').boundingBox();
    const bottom = Math.ceil((response?.y ?? 900) + (response?.height ?? 0) + 24);
    const png = await page.screenshot({ fullPage: true, clip: { x: 0, y: 0, width: 1280, height: bottom } });
    writeFileSync(out, withFingerprint(png, pageFingerprint()));
    process.stdout.write(`${out}\n`);
  } finally {
    await browser.close();
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`docs:screenshot: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
