/**
 * Drives the gateway's /docs page (Swagger UI) in Debian's chromium through playwright-core, as a person would:
 * Authorize, sign in on the identity provider's login page, then "Execute" routes from the page itself.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** One line saying what is missing, for the command's output; CI installs the package. */
export function missingChromium(): string | undefined {
  return existsSync(CHROMIUM)
    ? undefined
    : `chromium not found at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) or set CHROMIUM_PATH`;
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Console errors and page errors seen so far (Content-Security-Policy violations among them). */
  problems: string[];
  close(): Promise<void>;
}

/** Headless chromium with a new, empty profile, no network of its own (no updates, sync or QUIC). */
export async function openBrowser(): Promise<Browser> {
  const profile = mkdtempSync(path.join(tmpdir(), 'mileage-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const problems: string[] = [];
  const watch = (page: Page) => {
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`${page.url()}: ${e.message}`));
  };
  context.on('page', watch);
  const page = context.pages()[0] ?? (await context.newPage());
  watch(page);
  return {
    context,
    page,
    problems,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** The page's OAuth2 block in the Authorize dialog (the authorization-code flow, not the SCIM schemes). */
const personSignIn = (page: Page) => page.locator('.auth-container', { hasText: 'authorizationCode' });

/**
 * Authorize → the provider's login page in Swagger UI's popup → back to /docs/oauth2-redirect.html, which hands the
 * code to the page; the page exchanges it (PKCE) at the token endpoint. `wrongPasswordFirst` submits a wrong password
 * before the right one and returns the login page's error text.
 */
export async function signIn(
  page: Page,
  account: { username: string; password: string; wrongPasswordFirst?: boolean },
): Promise<{ loginError?: string }> {
  await page.locator('.auth-wrapper button.authorize').click();
  const block = personSignIn(page);
  await block.waitFor();
  const [popup] = await Promise.all([
    page.waitForEvent('popup'),
    block.getByRole('button', { name: 'Apply given OAuth2 credentials' }).click(),
  ]);
  const submit = async (password: string) => {
    await popup.locator('input[name="username"]').fill(account.username);
    await popup.locator('input[name="password"]').fill(password);
    await popup.locator('[type="submit"]').click();
  };
  let loginError: string | undefined;
  if (account.wrongPasswordFirst) {
    await submit(`${account.password}-wrong`);
    // The development provider's error paragraph, or Keycloak's (login theme v2: a helper text below the field).
    const error = popup.locator('p.error, .kc-feedback-text').first();
    await error.waitFor();
    loginError = (await error.innerText()).trim();
  }
  await Promise.all([popup.waitForEvent('close'), submit(account.password)]);
  // Swagger UI offers "Logout" once it holds a token.
  await block.getByRole('button', { name: 'Remove authorization' }).waitFor();
  await page.locator('.modal-ux button.close-modal').click();
  return loginError === undefined ? {} : { loginError };
}

export interface Executed {
  status: number;
  body: unknown;
  /** The curl command Swagger UI shows for the request it sent. */
  curl: string;
}

/** Opens one operation, fills its parameters, presses Execute and reads the response the page rendered. */
export async function execute(
  page: Page,
  operation: { tag: string; operationId: string; params?: Record<string, string> },
): Promise<Executed> {
  const block = page.locator(`#operations-${operation.tag.replace(/ /g, '_')}-${operation.operationId}`);
  await block.locator('.opblock-summary').first().click();
  for (const [name, value] of Object.entries(operation.params ?? {}))
    await block.locator(`tr[data-param-name="${name}"] input`).fill(value);
  await block.locator('button.execute').click();
  const live = block.locator('.live-responses-table');
  const status = live.locator('tbody .response-col_status').first();
  await status.waitFor();
  const body = await live.locator('.response-col_description .highlight-code pre').first().innerText();
  const curl = await block.locator('.curl-command pre, .curl-command code').first().innerText();
  return { status: Number((await status.innerText()).trim()), body: JSON.parse(body) as unknown, curl };
}
