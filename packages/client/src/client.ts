import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './generated/api';

/** The typed client of the External API: `client.GET('/v1/groups/{group_id}/reported-drives', { params })`. */
export type MileageClient = Client<paths>;
export type Schemas = components['schemas'];

/** A bearer token, or something that returns a fresh one (called before every request). */
export type TokenSource = string | (() => string | Promise<string>);

export interface ClientOptions {
  /** The gateway's origin, e.g. `https://api.example.com` or `http://127.0.0.1:8080`. */
  baseUrl: string;
  token: TokenSource;
  /** Another fetch (tests, proxies); the global one by default. */
  fetch?: typeof globalThis.fetch;
  userAgent?: string;
}

/**
 * A typed client generated from the gateway's OpenAPI document (openapi-fetch over openapi-typescript's types), with
 * the bearer token added to every request. It never retries by itself: the sync helpers do (Retry-After, 503, 410).
 */
export function createMileageClient(options: ClientOptions): MileageClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const token = options.token;
  client.use({
    async onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${typeof token === 'string' ? token : await token()}`);
      if (options.userAgent) request.headers.set('User-Agent', options.userAgent);
      return request;
    },
  });
  return client;
}

export type OAuthGrant =
  | { grant_type: 'refresh_token'; refresh_token: string }
  | { grant_type: 'password'; username: string; password: string }
  | { grant_type: 'client_credentials' };

export interface OAuthTokenOptions {
  /** The realm's token endpoint, e.g. `<issuer>/protocol/openid-connect/token`. */
  tokenUrl: string;
  clientId: string;
  clientSecret?: string;
  grant: OAuthGrant;
  scope?: string;
  fetch?: typeof globalThis.fetch;
}

/**
 * A token source for unattended jobs: asks the token endpoint once, keeps the access token until 30 s before it
 * expires, then asks again (a rotated refresh token replaces the old one in memory). For `/v1` the token must name a
 * platform user (CONTRACT §5): a nightly job uses a refresh token of an admin's sign-in (authorization code + PKCE,
 * scope `offline_access`); the password grant exists only in the development realm; a client-credentials token is
 * refused by `/v1` (403) and is here for completeness.
 */
export function oauthToken(options: OAuthTokenOptions): () => Promise<string> {
  const doFetch = options.fetch ?? globalThis.fetch;
  let grant = options.grant;
  let cached: { token: string; until: number } | undefined;
  let pending: Promise<string> | undefined;
  const request = async (): Promise<string> => {
    const form = new URLSearchParams({ ...grant, client_id: options.clientId });
    if (options.scope) form.set('scope', options.scope);
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (options.clientSecret)
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`).toString('base64')}`;
    const res = await doFetch(options.tokenUrl, { method: 'POST', headers, body: form });
    const body = (await res.json().catch(() => ({}))) as {
      access_token?: string;
      expires_in?: number;
      refresh_token?: string;
      error?: string;
    };
    // The error code only: a token endpoint's description may echo what was sent.
    if (!res.ok || !body.access_token)
      throw new Error(`token endpoint answered ${res.status}${body.error ? ` (${body.error})` : ''}`);
    if (grant.grant_type === 'refresh_token' && body.refresh_token)
      grant = { grant_type: 'refresh_token', refresh_token: body.refresh_token };
    cached = { token: body.access_token, until: Date.now() + Math.max(0, (body.expires_in ?? 60) - 30) * 1000 };
    return body.access_token;
  };
  return async () => {
    if (cached && Date.now() < cached.until) return cached.token;
    pending ??= request().finally(() => (pending = undefined));
    return pending;
  };
}
