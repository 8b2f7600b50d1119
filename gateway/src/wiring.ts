// What the gateway's main.ts wires: its parts built from its configuration (the HTTP server, its Redis, its clients of
// the services, its token verifier); the process around them is runProcess's, as every service's.
import { drivesV1, groupsV1, scimV1, usersV1, webhooksV1 } from '@mileage/proto';
import { circuitBreakerConfig } from '@mileage/runtime/config';
import { createGrpcClient, type GrpcTls, OrganizationsServiceClient } from '@mileage/runtime/grpc';
import { type DependencyMonitor } from '@mileage/runtime/service';
import { type Logger, type Metrics } from '@mileage/runtime/telemetry';
import type { Express } from 'express';
import { Redis } from 'ioredis';
import type { Server } from 'node:http';
import { TokenVerifier } from './auth';
import { jwksUrl, type Config } from './config';
import type { Downstream } from './dependencies';

/** The shared Redis of the replicas (rate limits, SCIM token revocations), when REDIS_URL names one. */
export function openRedis(config: Config, logger: Logger): Redis | undefined {
  if (!config.REDIS_URL) return undefined;
  const redis = new Redis(config.REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: false,
    // A frozen Redis keeps its connection open: without a bound, rate-limit calls would hang; with it they fall
    // back to the replica's own in-memory limits (RateLimits' insurance limiter).
    commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
  });
  redis.on('error', (err: Error) => logger.warn({ err: { message: err.message } }, 'redis error'));
  return redis;
}

/** The clients of the services the gateway calls; each fails fast while its service's health check sees it down. */
export function downstreamClients(
  config: Config,
  { tls, metrics, logger, monitor }: { tls: GrpcTls; metrics: Metrics; logger: Logger; monitor: DependencyMonitor },
) {
  const client = (name: Downstream, deadlineMs: number) => ({
    defaultDeadlineMs: deadlineMs,
    credentials: tls.channelCredentials(),
    metrics,
    available: () => monitor.isUp(name),
    circuitBreaker: circuitBreakerConfig(config),
    logger,
  });
  return {
    users: createGrpcClient(usersV1.UsersServiceClient, config.USERS_ADDRESS, client('users', config.GRPC_DEADLINE_MS)),
    // Served by the Users process (it owns organizations and their SCIM tokens).
    organizations: createGrpcClient(
      OrganizationsServiceClient,
      config.USERS_ADDRESS,
      client('users', config.GRPC_DEADLINE_MS),
    ),
    groups: createGrpcClient(
      groupsV1.GroupsServiceClient,
      config.GROUPS_ADDRESS,
      client('groups', config.GRPC_DEADLINE_MS),
    ),
    drives: createGrpcClient(
      drivesV1.DrivesServiceClient,
      config.DRIVES_ADDRESS,
      client('drives', config.GRPC_DEADLINE_MS),
    ),
    scim: createGrpcClient(scimV1.ScimServiceClient, config.SCIM_ADDRESS, client('scim', config.SCIM_DEADLINE_MS)),
    webhooks: createGrpcClient(
      webhooksV1.WebhooksServiceClient,
      config.WEBHOOKS_ADDRESS,
      client('webhooks', config.GRPC_DEADLINE_MS),
    ),
  };
}

/** The verifier of the realm's access tokens, its refusals counted and its key refreshes logged. */
export function tokenVerifier(config: Config, { metrics, logger }: { metrics: Metrics; logger: Logger }) {
  const tokenRefusals = metrics.counter({
    name: 'gateway_token_refusals_total',
    help:
      'Bearer tokens refused, by reason (a fixed set) and status: 429 while the address group (an IPv4 address, an ' +
      'IPv6 /64) is over INVALID_TOKEN_BURST / INVALID_TOKENS_PER_MINUTE, else 401',
    labelNames: ['reason', 'status'],
  });
  return new TokenVerifier({
    issuer: config.OIDC_ISSUER,
    audience: config.OIDC_AUDIENCE,
    algorithms: config.OIDC_ALGORITHMS,
    clockSkewSeconds: config.OIDC_CLOCK_SKEW_SECONDS,
    userIdClaim: config.OIDC_USER_ID_CLAIM,
    scopeClaim: config.OIDC_SCOPE_CLAIM,
    organizationClaim: config.OIDC_ORGANIZATION_CLAIM,
    requireAccessTokenType: config.OIDC_REQUIRE_TYP_AT_JWT,
    maxTokenAgeSeconds: config.OIDC_MAX_TOKEN_AGE_SECONDS,
    invalidTokenLimit: { burst: config.INVALID_TOKEN_BURST, perMinute: config.INVALID_TOKENS_PER_MINUTE },
    onRefused: (reason, limited) => tokenRefusals.inc({ reason, status: limited ? '429' : '401' }),
    jwks: new URL(jwksUrl(config)),
    onKeysStale: (stale, reason) =>
      stale
        ? logger.warn({ reason }, "the realm's signing keys could not be refreshed; the known keys stay in use")
        : logger.info("the realm's signing keys were refreshed again"),
  });
}

/**
 * The verifier's signing keys, fetched now and until they load (without them every token would be refused); then
 * JwksSource keeps them cached, also while the provider is unreachable.
 */
export function loadSigningKeys(verifier: TokenVerifier, logger: Logger, stopped: () => boolean): void {
  const load = () =>
    verifier.loadKeys().catch((err: unknown) => {
      logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'signing keys not loaded');
      if (!stopped()) setTimeout(load, 2_000).unref();
    });
  void load();
}

/** The app's HTTP server, listening, with the gateway's timeouts. */
export async function listen(app: Express, config: Config, draining: () => boolean): Promise<Server> {
  const server = app.listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // While draining, every response closes its connection: a client's keep-alive connection would otherwise hold the
  // drain open until SHUTDOWN_TIMEOUT_MS (then exit 1), and a request it sent late would meet a closing socket.
  server.prependListener('request', (_req, res) => {
    if (draining()) res.setHeader('connection', 'close');
  });
  server.requestTimeout = config.REQUEST_TIMEOUT_MS;
  server.headersTimeout = Math.min(config.REQUEST_TIMEOUT_MS, 20_000);
  server.keepAliveTimeout = 65_000;
  return server;
}

/**
 * Stops the HTTP server: requests in flight finish; connections idle now, or idle once their response is sent, are
 * closed, so the drain ends with the last response rather than at the timeout.
 */
export function drain(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    server.close(() => {
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}
