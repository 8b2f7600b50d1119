// Development identity provider process: Keycloak's URL layout for realm "mileage" on 127.0.0.1:8081.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { createLogger } from '@mileage/runtime/telemetry';
import { handleShutdown } from '@mileage/runtime/service';
import { DEMO_ACCOUNTS, type DevAccount } from './accounts.js';
import { startIdentityProvider } from './provider.js';

/** Its server closes every connection at once: a short bound is enough. */
const SHUTDOWN_TIMEOUT_MS = 5_000;

const logger = createLogger({ service: 'dev-idp', level: process.env.LOG_LEVEL ?? 'info' });

function fail(message: string): never {
  process.stderr.write(`Invalid configuration:\n  ${message}\n`);
  process.exit(78);
}

function readConfig() {
  const port = Number(process.env.DEV_IDP_PORT ?? 8081);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    fail(`DEV_IDP_PORT: expected a port number ("${process.env.DEV_IDP_PORT}")`);
  const ttl = Number(process.env.ACCESS_TOKEN_TTL_SECONDS ?? 300);
  if (!Number.isInteger(ttl) || ttl < 10 || ttl > 86_400) fail('ACCESS_TOKEN_TTL_SECONDS: expected 10..86400');
  const secret = process.env.SCIM_CLIENT_SECRET ?? 'scim-dev-secret';
  if (secret.length < 8) fail('SCIM_CLIENT_SECRET: at least 8 characters (set (hidden))');
  let accounts: DevAccount[] = DEMO_ACCOUNTS;
  if (process.env.DEV_IDP_ACCOUNTS_FILE) {
    try {
      accounts = JSON.parse(readFileSync(process.env.DEV_IDP_ACCOUNTS_FILE, 'utf8')) as DevAccount[];
      if (
        !Array.isArray(accounts) ||
        !accounts.every((a) => a.username && a.password && /^[A-Za-z0-9]{10}$/.test(a.userId))
      )
        throw new Error('shape');
    } catch {
      fail('DEV_IDP_ACCOUNTS_FILE: expected a JSON array of {username, password, userId (10 characters [A-Za-z0-9])}');
    }
  }
  // The gateway's documentation page signs people in with the client mileage-docs (comma-separated list).
  const docsRedirectUris = (process.env.DEV_IDP_DOCS_REDIRECT_URIS ?? 'http://127.0.0.1:8080/docs/oauth2-redirect.html')
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  if (!docsRedirectUris.every((u) => /^https?:\/\/[^/]+\/\S*$/.test(u)))
    fail('DEV_IDP_DOCS_REDIRECT_URIS: expected comma-separated http(s) URLs');
  return {
    docsRedirectUris,
    host: process.env.DEV_IDP_HOST ?? '127.0.0.1',
    port,
    dataDir: path.resolve(process.env.DEV_IDP_DATA_DIR ?? '.data/dev-idp'),
    accounts,
    scimClientSecret: secret,
    accessTokenTtlSeconds: ttl,
  };
}

const config = readConfig();
const idp = await startIdentityProvider({ ...config, log: (event, fields) => logger.info({ ...fields }, event) });

// The same drain as every other process: "shutting down", close, "stopped" once written, exit (a second signal: at once).
handleShutdown(logger, [{ name: 'http', run: () => idp.close() }], SHUTDOWN_TIMEOUT_MS);
