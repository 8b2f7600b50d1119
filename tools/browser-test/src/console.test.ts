// `npm run test:browser`: the /docs console in a real browser against the whole stack (`launchStack`: free ports, a
// fresh data folder, the demo data), signed in as a demo user through the identity provider's login page: the
// development provider's, or Keycloak's (run.mjs --keycloak).
import { launchStack, type LaunchedStack } from '@mileage/devstack';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { execute, openBrowser, signIn, type Browser } from './console';
import { documentedExample } from './picture';

let stack: LaunchedStack;
let browser: Browser;

before(async () => {
  // run.mjs --keycloak: the realm to trust, and the gateway port its mileage-docs client was told about.
  const issuer = process.env.BROWSER_TEST_ISSUER;
  const gatewayPort = process.env.BROWSER_TEST_GATEWAY_PORT;
  stack = await launchStack({
    env: { ...(issuer ? { OIDC_ISSUER: issuer } : {}), ...(gatewayPort ? { GATEWAY_PORT: gatewayPort } : {}) },
  });
  browser = await openBrowser();
});
after(async () => {
  await browser?.close();
  await stack?.stop();
});

describe('the /docs console in chromium', () => {
  test('renders offline with its tags; Authorize offers the sign-in of a person with PKCE', async () => {
    const { page } = browser;
    await page.goto(`${stack.gatewayUrl}/docs`);
    await page.locator('.information-container .title').waitFor();
    assert.match(await page.locator('.information-container .title').innerText(), /Mileage Platform External API/);
    const tags = await page.locator('.opblock-tag-section h3 .opblock-tag, h3.opblock-tag').allInnerTexts();
    assert.deepEqual(
      tags.map((t) => t.split('\n')[0]!.trim()),
      ['External API', 'SCIM 2.0'],
    );
    await page.locator('.auth-wrapper button.authorize').click();
    const dialog = page.locator('.modal-ux');
    assert.match(await dialog.innerText(), /oauth2 \(OAuth2, authorizationCode with PKCE\)/);
    const person = dialog.locator('.auth-container', { hasText: 'authorizationCode' });
    assert.equal(await person.locator('input[data-name="clientId"]').inputValue(), 'mileage-docs');
    await dialog.locator('button.close-modal').click();
  });

  test('a wrong password is a clear error on the login page; the right one signs in', async () => {
    const { loginError } = await signIn(browser.page, {
      username: 'alice@example.com',
      password: 'demo',
      wrongPasswordFirst: true,
    });
    assert.match(loginError ?? '', /Invalid username or password/);
  });

  test('GET /v1/users/me from the page: 200 with the signed-in person', async () => {
    const me = await execute(browser.page, { tag: 'External API', operationId: 'getMe' });
    assert.equal(me.status, 200);
    assert.match(me.curl, /Authorization: Bearer ey/);
    assert.deepEqual(me.body, documentedExample(), 'the console shows the demo user the document gives as example');
  });

  test('a page of the drives reported to the Demo Team from the page: 200 with its drivers’ drives', async () => {
    const page = await execute(browser.page, {
      tag: 'External API',
      operationId: 'getGroupReportedDrives',
      params: { group_id: '1', limit: '5' },
    });
    assert.equal(page.status, 200);
    const body = page.body as {
      results: { id: string; driver: { id: string }; details: object; review_comments: unknown[] }[];
      has_more: boolean;
      next_cursor: string | null;
    };
    assert.equal(body.results.length, 5);
    assert.equal(body.has_more, true);
    assert.equal(typeof body.next_cursor, 'string');
    for (const drive of body.results) {
      assert.match(drive.id, /^[1-9][0-9]*$/);
      assert.ok(['BobDriver1', 'CarolDrv01'].includes(drive.driver.id), drive.driver.id);
      assert.ok(drive.details && Array.isArray(drive.review_comments));
    }
  });

  test('nothing on the page broke: no script error, no Content-Security-Policy violation', () => {
    assert.deepEqual(browser.problems, []);
  });
});
