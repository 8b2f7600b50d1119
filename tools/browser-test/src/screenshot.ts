// `npm run docs:screenshot [-- <file>]`: the /docs console signed in as alice@example.com after "Execute" on
// GET /v1/users/me, written to docs/console.png (or <file>). Starts its own stack on free ports and stops it.
import { launchStack } from '@mileage/devstack';
import * as path from 'node:path';
import { execute, missingChromium, openBrowser, signIn } from './console';

async function main(): Promise<void> {
  const missing = missingChromium();
  if (missing) throw new Error(missing);
  const out = path.resolve(process.argv[2] ?? path.join(__dirname, '..', '..', '..', 'docs', 'console.png'));
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
    // From the top of the page to the end of the rendered response.
    const response = await page.locator('#operations-External_API-getMe .live-responses-table').boundingBox();
    const bottom = Math.ceil((response?.y ?? 900) + (response?.height ?? 0) + 24);
    await page.screenshot({ path: out, fullPage: true, clip: { x: 0, y: 0, width: 1280, height: bottom } });
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
