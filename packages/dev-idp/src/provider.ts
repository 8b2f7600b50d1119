import { DEFAULT_ORGANIZATION_CLAIM } from '@mileage/runtime/formats';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { AccountDirectory, DEMO_ACCOUNTS, type DevAccount } from './accounts.js';
import { keyFilePath, loadOrCreateKeys } from './keys.js';
import { errorPage, loginPage } from './login-page.js';

export const REALM_PATH = '/realms/mileage';
export const API_SCOPES = [
  'users_read',
  'drives_read',
  'groups_read',
  'groups_read_reported_drives',
  'webhooks_manage',
  'organization_manage',
  'scim',
] as const;
const V1_SCOPES = 'users_read drives_read groups_read groups_read_reported_drives webhooks_manage organization_manage';
/**
 * Provisioning clients bound to an organization by a claim in their tokens, as the realm's hardcoded-claim mapper binds
 * them (development secrets). `mileage-scim` carries no claim: the gateway's SCIM_CLIENT_ORGANIZATIONS binds it.
 */
export const ORGANIZATION_SCIM_CLIENTS = [
  { clientId: 'mileage-scim-globex', secret: 'scim-globex-dev-secret', organization: 'globex' },
] as const;
const organizationOfClient = new Map<string, string>(
  ORGANIZATION_SCIM_CLIENTS.map((c) => [c.clientId, c.organization]),
);
/** The public client of the gateway's documentation page (/docs): the /v1 scopes a person may grant. */
export const DOCS_CLIENT_ID = 'mileage-docs';
const DOCS_SCOPES = V1_SCOPES;
const RESOURCE_INDICATOR = 'urn:mileage:api';
const AUDIENCE = 'mileage-api';

export interface IdentityProviderOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  dataDir: string;
  accounts?: DevAccount[];
  scimClientSecret: string;
  accessTokenTtlSeconds?: number;
  exampleRedirectUris?: string[];
  /** Redirect URIs of the documentation page's client: the gateway's `<origin>/docs/oauth2-redirect.html`. */
  docsRedirectUris?: string[];
  log?: (event: string, fields?: Record<string, unknown>) => void;
}

export interface IdentityProvider {
  issuer: string;
  port: number;
  jwksUri: string;
  tokenEndpoint: string;
  /** The private signing keys (JWKS), newest first; tests sign their own tokens with them. */
  keyFile: string;
  close(): Promise<void>;
}

/**
 * A development OpenID provider (oidc-provider) with Keycloak's URL layout and access-token shape for
 * realm "mileage". Binds first so that the issuer carries the real port, then builds the provider.
 */
export async function startIdentityProvider(options: IdentityProviderOptions): Promise<IdentityProvider> {
  const host = options.host ?? '127.0.0.1';
  const server = http.createServer();
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8081, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://${host}:${port}${REALM_PATH}`;
  const log = options.log ?? (() => {});
  const directory = new AccountDirectory(options.accounts ?? DEMO_ACCOUNTS);
  const { keys, cookieKeys } = await loadOrCreateKeys(options.dataDir);
  const ttl = options.accessTokenTtlSeconds ?? 300;

  const resourceServer = {
    scope: API_SCOPES.join(' '),
    audience: AUDIENCE,
    accessTokenTTL: ttl,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: 'RS256' } },
  } as const;

  const configuration: Configuration = {
    clients: [
      {
        client_id: 'mileage-scim',
        client_secret: options.scimClientSecret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
        scope: 'scim',
      },
      ...ORGANIZATION_SCIM_CLIENTS.map((c) => ({
        client_id: c.clientId,
        client_secret: c.secret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic' as const,
        scope: 'scim',
      })),
      {
        client_id: 'mileage-dev',
        token_endpoint_auth_method: 'none',
        grant_types: ['password', 'authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: options.exampleRedirectUris ?? ['http://127.0.0.1:8765/callback'],
        scope: `openid profile email offline_access ${V1_SCOPES}`,
      },
      {
        client_id: 'mileage-example',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: options.exampleRedirectUris ?? ['http://127.0.0.1:8765/callback'],
        scope: `openid profile email offline_access ${V1_SCOPES}`,
      },
      {
        // Swagger UI on the gateway's /docs page: a browser app, so public, code + PKCE (S256, enforced below).
        client_id: DOCS_CLIENT_ID,
        client_name: 'API documentation page',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: options.docsRedirectUris ?? ['http://127.0.0.1:8080/docs/oauth2-redirect.html'],
        scope: DOCS_SCOPES,
      },
    ],
    // The token endpoint answers browsers (CORS) only for public clients, from the origin of one of their redirect
    // URIs: the documentation page exchanges its code from the gateway's origin.
    clientBasedCORS: (_ctx, origin, client) =>
      client.clientAuthMethod === 'none' && (client.redirectUris ?? []).some((uri) => originOf(uri) === origin),
    jwks: { keys: keys as never },
    cookies: { keys: cookieKeys },
    scopes: ['openid', 'offline_access', 'profile', 'email', ...API_SCOPES],
    claims: {
      openid: ['sub'],
      profile: ['given_name', 'family_name', 'name', 'preferred_username'],
      email: ['email', 'email_verified'],
    },
    // OAuth 2.1: the authorization code flow only (no implicit or hybrid responses), PKCE always.
    responseTypes: ['code'],
    pkce: { required: () => true },
    routes: {
      authorization: '/protocol/openid-connect/auth',
      token: '/protocol/openid-connect/token',
      jwks: '/protocol/openid-connect/certs',
      userinfo: '/protocol/openid-connect/userinfo',
      revocation: '/protocol/openid-connect/revoke',
      introspection: '/protocol/openid-connect/token/introspect',
      end_session: '/protocol/openid-connect/logout',
    },
    ttl: {
      AccessToken: ttl,
      ClientCredentials: ttl,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      RefreshToken: 1800,
      IdToken: ttl,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE_INDICATOR,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== RESOURCE_INDICATOR) throw new errors.InvalidTarget();
          return resourceServer;
        },
      },
    },
    interactions: { url: (_ctx, interaction) => `${REALM_PATH}/interaction/${interaction.uid}` },
    // First-party development clients: consent is implied for the scopes the client may have.
    loadExistingGrant: async (ctx) => {
      const accountId = ctx.oidc.session?.accountId;
      const client = ctx.oidc.client;
      if (!accountId || !client) return undefined;
      const grant = new ctx.oidc.provider.Grant({ accountId, clientId: client.clientId });
      const requested = [...(ctx.oidc.requestParamScopes ?? [])];
      // API scopes are registered provider scopes too, so the authorization endpoint counts them as OIDC scopes.
      grant.addOIDCScope(requested.join(' '));
      grant.addResourceScope(
        RESOURCE_INDICATOR,
        requested.filter((s) => (API_SCOPES as readonly string[]).includes(s)).join(' '),
      );
      await grant.save();
      return grant;
    },
    findAccount: (_ctx, sub) => {
      const account = directory.byId(sub);
      if (!account) return undefined;
      return {
        accountId: account.userId,
        claims: () => ({
          sub: account.userId,
          preferred_username: account.username,
          given_name: account.givenName,
          family_name: account.familyName,
          name: [account.givenName, account.familyName].filter(Boolean).join(' ') || undefined,
          email: account.email ?? account.username,
          email_verified: true,
        }),
      };
    },
    // Keycloak's access-token claims beside the RFC 9068 ones oidc-provider writes.
    extraTokenClaims: (_ctx, token) => {
      const clientId = (token as { clientId?: string }).clientId;
      const accountId = (token as { accountId?: string }).accountId;
      const account = accountId ? directory.byId(accountId) : undefined;
      const organization = clientId ? organizationOfClient.get(clientId) : undefined;
      return {
        typ: 'Bearer',
        azp: clientId,
        ...(organization ? { [DEFAULT_ORGANIZATION_CLAIM]: organization } : {}),
        ...(account
          ? { user_id: account.userId, preferred_username: account.username }
          : { preferred_username: `service-account-${clientId}` }),
      };
    },
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = errorPage(String(out.error ?? 'error'), String(out.error_description ?? ''));
    },
  };

  const provider = new Provider(issuer, configuration);
  provider.proxy = false;
  registerPasswordGrant(provider, directory, resourceServer);
  provider.on('server_error', (_ctx: unknown, err: Error) => log('server_error', { error: err.message }));
  provider.on('grant.error', (_ctx: unknown, err: Error) => log('grant_error', { error: err.message }));

  const callback = provider.callback();
  server.on('request', (req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith(`${REALM_PATH}/`)) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not_found' }));
      return;
    }
    const interaction = /^\/realms\/mileage\/interaction\/([A-Za-z0-9_-]+)(\?.*)?$/.exec(url);
    if (interaction) {
      handleInteraction(provider, directory, req, res).catch((err: unknown) => {
        log('interaction_error', { error: err instanceof Error ? err.message : String(err) });
        if (!res.headersSent)
          res
            .writeHead(400, { 'content-type': 'text/html' })
            .end(errorPage('Sign-in failed', 'The sign-in session expired or is invalid. Start again.'));
      });
      return;
    }
    // Mount below the realm path the way connect/express do: oidc-provider derives the prefix from originalUrl.
    (req as http.IncomingMessage & { originalUrl?: string }).originalUrl = url;
    req.url = url.slice(REALM_PATH.length) || '/';
    void callback(req, res);
  });

  log('listening', { issuer });
  return {
    issuer,
    port,
    jwksUri: `${issuer}/protocol/openid-connect/certs`,
    tokenEndpoint: `${issuer}/protocol/openid-connect/token`,
    keyFile: keyFilePath(options.dataDir),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function originOf(uri: string): string | undefined {
  try {
    return new URL(uri).origin;
  } catch {
    return undefined;
  }
}

/**
 * The resource-owner password grant (development realm only, as Keycloak's "direct access grants"):
 * oidc-provider does not ship it, so it is registered here and issues the same JWT access token.
 */
function registerPasswordGrant(provider: Provider, directory: AccountDirectory, resourceServerInfo: object): void {
  const handler = async (ctx: KoaContextWithOIDC) => {
    const params = ctx.oidc.params as { username?: string; password?: string; scope?: string };
    const client = ctx.oidc.client!;
    if (!params.username || !params.password) throw new errors.InvalidRequest('username and password are required');
    const account = directory.authenticate(params.username, params.password);
    if (!account) throw new errors.InvalidGrant('invalid user credentials');

    const requested = (params.scope ?? '').split(' ').filter(Boolean);
    const allowed = new Set((client.scope ?? '').split(' '));
    const refused = requested.filter((s) => !allowed.has(s));
    if (refused.length) throw new errors.InvalidScope('requested scope is not allowed', refused.join(' '));
    const apiScopes = requested.filter((s) => (API_SCOPES as readonly string[]).includes(s));

    const grant = new provider.Grant({ accountId: account.userId, clientId: client.clientId });
    grant.addResourceScope(RESOURCE_INDICATOR, apiScopes.join(' '));
    const grantId = await grant.save();
    const token = new provider.AccessToken({
      accountId: account.userId,
      client,
      grantId,
      gty: 'password',
      scope: apiScopes.join(' ') || undefined,
    } as never);
    token.resourceServer = new (
      provider as unknown as { ResourceServer: new (id: string, info: object) => never }
    ).ResourceServer(RESOURCE_INDICATOR, resourceServerInfo);
    const value = await token.save();
    ctx.body = {
      access_token: value,
      token_type: 'Bearer',
      expires_in: token.expiration,
      scope: apiScopes.join(' '),
    };
  };
  provider.registerGrantType('password', handler as never, ['username', 'password', 'scope']);
}

async function handleInteraction(
  provider: Provider,
  directory: AccountDirectory,
  req: http.IncomingMessage,
  res: http.ServerResponse,
) {
  const details = await provider.interactionDetails(req, res);
  const action = `${REALM_PATH}/interaction/${details.uid}`;
  const clientId = String(details.params.client_id ?? '');
  if (req.method === 'GET') {
    if (details.prompt.name !== 'login') {
      // Consent for the development clients is implied (see loadExistingGrant).
      await provider.interactionFinished(req, res, { consent: {} }, { mergeWithLastSubmission: true });
      return;
    }
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      .end(loginPage({ action, clientId }));
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'GET, POST' }).end();
    return;
  }
  const form = new URLSearchParams(await readBody(req, 16 * 1024));
  const username = form.get('username') ?? '';
  const account = directory.authenticate(username, form.get('password') ?? '');
  if (!account) {
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      .end(loginPage({ action, clientId, username, error: 'Invalid username or password.' }));
    return;
  }
  await provider.interactionFinished(
    req,
    res,
    { login: { accountId: account.userId } },
    { mergeWithLastSubmission: false },
  );
}

function readBody(req: http.IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
