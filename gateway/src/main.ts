import { tracing } from './instrument';
import { drivesV1, groupsV1, scimV1, usersV1 } from '@mileage/proto';
import {
  createGrpcClient,
  createLogger,
  handleShutdown,
  HealthClient,
  loadConfigOrExit,
  Metrics,
} from '@mileage/runtime';
import { Redis } from 'ioredis';
import { createApp } from './app';
import { TokenVerifier } from './auth';
import { configSchema, jwksUrl } from './config';
import { RateLimits } from './rate-limit';

async function main(): Promise<void> {
  const config = loadConfigOrExit(configSchema);
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
  const metrics = new Metrics('gateway');
  const redis = config.REDIS_URL
    ? new Redis(config.REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false })
    : undefined;
  redis?.on('error', (err: Error) => logger.warn({ err: { message: err.message } }, 'redis error'));
  const users = createGrpcClient(usersV1.UsersServiceClient, config.USERS_ADDRESS, {
    defaultDeadlineMs: config.GRPC_DEADLINE_MS,
    metrics,
  });
  const groups = createGrpcClient(groupsV1.GroupsServiceClient, config.GROUPS_ADDRESS, {
    defaultDeadlineMs: config.GRPC_DEADLINE_MS,
    metrics,
  });
  const drives = createGrpcClient(drivesV1.DrivesServiceClient, config.DRIVES_ADDRESS, {
    defaultDeadlineMs: config.GRPC_DEADLINE_MS,
    metrics,
  });
  const scim = createGrpcClient(scimV1.ScimServiceClient, config.SCIM_ADDRESS, {
    defaultDeadlineMs: config.SCIM_DEADLINE_MS,
    metrics,
  });
  const downstreams = [
    { name: 'users', service: 'mileage.users.v1.UsersService', health: new HealthClient(config.USERS_ADDRESS) },
    { name: 'groups', service: 'mileage.groups.v1.GroupsService', health: new HealthClient(config.GROUPS_ADDRESS) },
    { name: 'drives', service: 'mileage.drives.v1.DrivesService', health: new HealthClient(config.DRIVES_ADDRESS) },
    { name: 'scim', service: 'mileage.scim.v1.ScimService', health: new HealthClient(config.SCIM_ADDRESS) },
  ];
  if (!config.CURSOR_SECRET)
    logger.warn(
      'CURSOR_SECRET is not set: page cursors are signed with a per-process key and do not survive a restart or cross replicas',
    );
  const verifier = new TokenVerifier({
    issuer: config.OIDC_ISSUER,
    audience: config.OIDC_AUDIENCE,
    algorithms: config.OIDC_ALGORITHMS,
    clockSkewSeconds: config.OIDC_CLOCK_SKEW_SECONDS,
    userIdClaim: config.OIDC_USER_ID_CLAIM,
    scopeClaim: config.OIDC_SCOPE_CLAIM,
    jwks: new URL(jwksUrl(config)),
    onKeysStale: (stale, reason) =>
      stale
        ? logger.warn({ reason }, "the realm's signing keys could not be refreshed; the known keys stay in use")
        : logger.info("the realm's signing keys were refreshed again"),
  });
  const app = createApp({
    issuer: config.OIDC_ISSUER,
    docsClientId: config.DOCS_OAUTH_CLIENT_ID,
    logger,
    metrics,
    verifier,
    rateLimits: new RateLimits({ ...(redis ? { redis } : {}), multiplier: config.RATE_LIMIT_MULTIPLIER }),
    users,
    groups,
    drives,
    scim,
    scimDeadlineMs: config.SCIM_DEADLINE_MS,
    ...(config.CURSOR_SECRET ? { cursorSecret: config.CURSOR_SECRET } : {}),
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    readiness: async () => {
      const results = await Promise.all(downstreams.map((d) => d.health.check(d.service, 1_000)));
      const checks: Record<string, boolean> = Object.fromEntries(downstreams.map((d, i) => [d.name, results[i]!]));
      if (redis) checks.redis = redis.status === 'ready';
      return { ready: Object.values(checks).every(Boolean), checks };
    },
  });
  if (config.TRUST_PROXY_HOPS > 0) app.set('trust proxy', config.TRUST_PROXY_HOPS);

  const server = app.listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.requestTimeout = config.REQUEST_TIMEOUT_MS;
  server.headersTimeout = Math.min(config.REQUEST_TIMEOUT_MS, 20_000);
  server.keepAliveTimeout = 65_000;
  const metricsServer = await metrics.listen(config.METRICS_PORT, config.METRICS_HOST);
  logger.info(
    { host: config.HOST, port: config.PORT, metrics_port: config.METRICS_PORT, redis: Boolean(redis) },
    'gateway listening',
  );

  handleShutdown(
    logger,
    [
      {
        name: 'http',
        run: () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeIdleConnections();
          }),
      },
      {
        name: 'clients',
        run: () => [users, groups, drives, scim, ...downstreams.map((d) => d.health)].forEach((c) => c.close()),
      },
      { name: 'redis', run: () => redis?.quit() },
      { name: 'metrics', run: () => new Promise((resolve) => metricsServer.close(resolve)) },
      { name: 'tracing', run: () => tracing.shutdown() },
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`gateway: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
