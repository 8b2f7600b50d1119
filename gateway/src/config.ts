import { commonConfigSchema, env } from '@mileage/runtime/config';
import { DEFAULT_ORGANIZATION_CLAIM } from '@mileage/runtime/formats';
import { grpcTlsConfigShape } from '@mileage/runtime/grpc';
import { z } from 'zod';
import {
  DEFAULT_SCIM_TOKEN_CACHE_SECONDS,
  MAX_SCIM_TOKEN_CACHE_SECONDS,
  parseClientOrganizations,
} from './organization-credentials';

const algorithms = env.list(
  'RS256,PS256,ES256',
  (a) => /^(RS|PS|ES)(256|384|512)$|^EdDSA$/.test(a),
  'only asymmetric JWS algorithms (RS*, PS*, ES*, EdDSA) may be allowed',
  1,
);

export const configSchema = commonConfigSchema.extend({
  HOST: env.host('127.0.0.1'),
  PORT: env.port(8080),
  METRICS_PORT: env.port(9460),
  /** Keycloak realm URL, the tokens' `iss`. */
  OIDC_ISSUER: z.url().default('http://127.0.0.1:8081/realms/mileage'),
  /** Defaults to Keycloak's JWKS path below the issuer. */
  OIDC_JWKS_URL: z.url().optional(),
  OIDC_AUDIENCE: z.string().min(1).default('mileage-api'),
  OIDC_ALGORITHMS: algorithms,
  OIDC_CLOCK_SKEW_SECONDS: z.coerce.number().int().min(0).max(300).default(30),
  OIDC_USER_ID_CLAIM: z.string().min(1).default('user_id'),
  OIDC_SCOPE_CLAIM: z.string().min(1).default('scope'),
  /** The claim naming a provisioning client's organization (its id or alias); Keycloak's `organization` otherwise. */
  OIDC_ORGANIZATION_CLAIM: z.string().min(1).default(DEFAULT_ORGANIZATION_CLAIM),
  /**
   * Provisioning clients bound to an organization by configuration (their tokens name none): comma-separated
   * `client=organization` pairs, the organization by id or alias, e.g. `mileage-scim=demo`.
   */
  SCIM_CLIENT_ORGANIZATIONS: z
    .string()
    .default('')
    .transform((text, ctx) => {
      try {
        return parseClientOrganizations(text);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  /**
   * How long a replica keeps a resolved SCIM secret token while it hears revocations (Redis pub/sub; without REDIS_URL
   * its own): revocations reach it at once, this bounds only one whose announcement was lost.
   */
  SCIM_TOKEN_CACHE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(MAX_SCIM_TOKEN_CACHE_SECONDS)
    .default(DEFAULT_SCIM_TOKEN_CACHE_SECONDS),
  /** Require RFC 9068's JOSE header `typ: at+jwt`; Keycloak writes `JWT` unless the client is configured for it. */
  OIDC_REQUIRE_TYP_AT_JWT: env.boolean(false),
  /** Tokens issued (`iat`) longer ago are refused even when their `exp` is far ahead. */
  OIDC_MAX_TOKEN_AGE_SECONDS: env.positiveInt(24 * 3600),
  /**
   * Invalid tokens one client address group (an IPv4 address, an IPv6 /64) may send at once, then at this rate, before
   * its further invalid ones are answered 429 instead of 401; its valid tokens are always answered.
   */
  INVALID_TOKEN_BURST: env.positiveInt(20),
  INVALID_TOKENS_PER_MINUTE: env.positiveInt(60),
  USERS_ADDRESS: env.target('127.0.0.1:50051'),
  GROUPS_ADDRESS: env.target('127.0.0.1:50052'),
  DRIVES_ADDRESS: env.target('127.0.0.1:50053'),
  SCIM_ADDRESS: env.target('127.0.0.1:50054'),
  WEBHOOKS_ADDRESS: env.target('127.0.0.1:50055'),
  /** Deadline of one forwarded SCIM request; a write makes several calls behind it. */
  SCIM_DEADLINE_MS: env.positiveInt(10_000),
  /** HMAC key of page cursors; the same on every replica. Unset: a random key per process (cursors die with it). */
  CURSOR_SECRET: z.string().min(32, 'at least 32 characters').optional(),
  /** While CURSOR_SECRET rotates: the other key, whose cursors are still accepted (never used to sign). */
  CURSOR_SECRET_PREVIOUS: z.string().min(32, 'at least 32 characters').optional(),
  GRPC_DEADLINE_MS: env.positiveInt(2_000),
  /** Shared with the SCIM service: the HMAC key of the attestation of each SCIM request's provisioning client. */
  ACTOR_ATTESTATION_SECRET: z.string().min(32, 'at least 32 characters'),
  ...grpcTlsConfigShape,
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'expected a redis:// or rediss:// URL')
    .optional(),
  /** Bound on one Redis command; past it a replica limits on its own until Redis answers again. */
  REDIS_COMMAND_TIMEOUT_MS: env.positiveInt(500),
  /** Pause between two rounds of dependency checks (gRPC health of each service, Redis ping). */
  DEPENDENCY_CHECK_INTERVAL_MS: env.positiveInt(2_000),
  /**
   * Cost units one replica serves at once (request-cost.ts: a point read is 1, a page of 100 reported drives 26, a
   * SCIM list of 100 15): the capacity each organization's share is a part of.
   */
  GATEWAY_CAPACITY_UNITS: env.positiveInt(256),
  /**
   * Cost units one replica admits in a second: a unit is ~0.7 ms of CPU of the whole path (its services and PostgreSQL
   * included), so a core's worth is ~1,400; 1,000 is the 70 % the autoscalers aim at.
   */
  GATEWAY_CAPACITY_UNITS_PER_SECOND: env.positiveInt(1_000),
  /** The most one organization may take of either while another is active, as a fraction (1: the whole replica). */
  GATEWAY_ORGANIZATION_SHARE: z.coerce.number().gt(0).max(1).default(0.125),
  /** Multiplies every per-minute limit; for load tests only. */
  RATE_LIMIT_MULTIPLIER: z.coerce.number().positive().default(1),
  REQUEST_TIMEOUT_MS: env.positiveInt(30_000),
  BODY_LIMIT_BYTES: env.positiveInt(1_048_576),
  /** The realm's public client of the /docs page (sign-in from the page); empty turns that sign-in off. */
  DOCS_OAUTH_CLIENT_ID: z
    .string()
    .regex(/^[\w.:-]*$/, 'a client id (letters, digits, _ . : -) or empty')
    .default('mileage-docs'),
  /** Hops of reverse proxies whose X-Forwarded-For to trust (0: none). */
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
});

export type Config = z.infer<typeof configSchema>;

/** A previous cursor key beside a per-process current one would accept old cursors but none of another replica's. */
export function checkCursorSecrets(c: Pick<Config, 'CURSOR_SECRET' | 'CURSOR_SECRET_PREVIOUS'>, ctx: z.RefinementCtx) {
  if (c.CURSOR_SECRET_PREVIOUS !== undefined && c.CURSOR_SECRET === undefined)
    ctx.addIssue({ code: 'custom', path: ['CURSOR_SECRET_PREVIOUS'], message: 'needs CURSOR_SECRET' });
}

export function jwksUrl(config: Pick<Config, 'OIDC_ISSUER' | 'OIDC_JWKS_URL'>): string {
  return config.OIDC_JWKS_URL ?? `${config.OIDC_ISSUER.replace(/\/$/, '')}/protocol/openid-connect/certs`;
}
