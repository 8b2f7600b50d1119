import { tracing } from './instrument';
import { drivesV1, groupsV1, scimV1, usersV1, webhooksV1 } from '@mileage/proto';
import {
  checkGrpcTls,
  checkOwnIdentity,
  circuitBreakerConfig,
  createGrpcClient,
  createLogger,
  grpcTls,
  reportGrpcTls,
  handleShutdown,
  loadConfigOrExit,
  Metrics,
} from '@mileage/runtime';
import { Redis } from 'ioredis';
import { createApp } from './app';
import { TokenVerifier } from './auth';
import { checkCursorSecrets, configSchema, jwksUrl } from './config';
import { gatewayDependencies, type Downstream } from './dependencies';
import { OrganizationShares } from './fair-share';
import { OrganizationCredentials } from './organization-credentials';
import { RateLimits } from './rate-limit';
import { LocalRevocations, RedisRevocations } from './scim-token-revocations';

async function main(): Promise<void> {
  const config = loadConfigOrExit(configSchema.superRefine(checkGrpcTls).superRefine(checkCursorSecrets));
  const tls = grpcTls(config);
  checkOwnIdentity(tls, 'gateway');
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
  const metrics = new Metrics('gateway');
  reportGrpcTls(tls, logger, metrics);
  const redis = config.REDIS_URL
    ? new Redis(config.REDIS_URL, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        lazyConnect: false,
        // A frozen Redis keeps its connection open: without a bound, rate-limit calls would hang; with it they fall
        // back to the replica's own in-memory limits (RateLimits' insurance limiter).
        commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
      })
    : undefined;
  redis?.on('error', (err: Error) => logger.warn({ err: { message: err.message } }, 'redis error'));
  const dependencies = gatewayDependencies({
    addresses: {
      users: config.USERS_ADDRESS,
      groups: config.GROUPS_ADDRESS,
      drives: config.DRIVES_ADDRESS,
      scim: config.SCIM_ADDRESS,
      webhooks: config.WEBHOOKS_ADDRESS,
    },
    ...(redis ? { redis } : {}),
    metrics,
    logger,
    intervalMs: config.DEPENDENCY_CHECK_INTERVAL_MS,
    credentials: tls.channelCredentials(),
  });
  const { monitor } = dependencies;
  const client = (name: Downstream, deadlineMs: number) => ({
    defaultDeadlineMs: deadlineMs,
    credentials: tls.channelCredentials(),
    metrics,
    available: () => monitor.isUp(name),
    circuitBreaker: circuitBreakerConfig(config),
    logger,
  });
  const users = createGrpcClient(
    usersV1.UsersServiceClient,
    config.USERS_ADDRESS,
    client('users', config.GRPC_DEADLINE_MS),
  );
  // Served by the Users process (it owns organizations and their SCIM tokens).
  const organizations = createGrpcClient(
    usersV1.OrganizationsServiceClient,
    config.USERS_ADDRESS,
    client('users', config.GRPC_DEADLINE_MS),
  );
  const groups = createGrpcClient(
    groupsV1.GroupsServiceClient,
    config.GROUPS_ADDRESS,
    client('groups', config.GRPC_DEADLINE_MS),
  );
  const drives = createGrpcClient(
    drivesV1.DrivesServiceClient,
    config.DRIVES_ADDRESS,
    client('drives', config.GRPC_DEADLINE_MS),
  );
  const scim = createGrpcClient(scimV1.ScimServiceClient, config.SCIM_ADDRESS, client('scim', config.SCIM_DEADLINE_MS));
  const webhooks = createGrpcClient(
    webhooksV1.WebhooksServiceClient,
    config.WEBHOOKS_ADDRESS,
    client('webhooks', config.GRPC_DEADLINE_MS),
  );
  if (!config.CURSOR_SECRET)
    logger.warn(
      'CURSOR_SECRET is not set: page cursors are signed with a per-process key and do not survive a restart or cross replicas',
    );
  const tokenRefusals = metrics.counter({
    name: 'gateway_token_refusals_total',
    help:
      'Bearer tokens refused, by reason (a fixed set) and status: 429 while the address group (an IPv4 address, an ' +
      'IPv6 /64) is over INVALID_TOKEN_BURST / INVALID_TOKENS_PER_MINUTE, else 401',
    labelNames: ['reason', 'status'],
  });
  // SCIM secret token revocations reach the other replicas through Redis; without it this gateway is the only one.
  const revocations = redis ? new RedisRevocations({ redis, logger, metrics }) : new LocalRevocations();
  const verifier = new TokenVerifier({
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
  const app = createApp({
    issuer: config.OIDC_ISSUER,
    docsClientId: config.DOCS_OAUTH_CLIENT_ID,
    logger,
    metrics,
    verifier,
    rateLimits: new RateLimits({ ...(redis ? { redis } : {}), multiplier: config.RATE_LIMIT_MULTIPLIER }),
    shares: new OrganizationShares({
      capacity: config.GATEWAY_CAPACITY_UNITS,
      unitsPerSecond: config.GATEWAY_CAPACITY_UNITS_PER_SECOND,
      organizationShare: config.GATEWAY_ORGANIZATION_SHARE,
      metrics,
    }),
    users,
    organizations,
    credentials: new OrganizationCredentials({
      organizations,
      clientOrganizations: config.SCIM_CLIENT_ORGANIZATIONS,
      tokenCacheSeconds: config.SCIM_TOKEN_CACHE_SECONDS,
      revocations,
    }),
    groups,
    drives,
    scim,
    webhooks,
    scimDeadlineMs: config.SCIM_DEADLINE_MS,
    actorAttestationSecret: config.ACTOR_ATTESTATION_SECRET,
    ...(tls.endUserSigner && { endUserSigner: tls.endUserSigner }),
    ...(config.CURSOR_SECRET ? { cursorSecret: config.CURSOR_SECRET } : {}),
    ...(config.CURSOR_SECRET_PREVIOUS ? { cursorSecretPrevious: config.CURSOR_SECRET_PREVIOUS } : {}),
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    // Ready: listening (this answers), configured (checked at start), signing keys loaded, not draining.
    readiness: () => {
      const checks = { signing_keys: verifier.keysLoaded(), accepting: !draining };
      return { ready: checks.signing_keys && checks.accepting, checks };
    },
    dependencies: () => monitor.report(),
  });
  if (config.TRUST_PROXY_HOPS > 0) app.set('trust proxy', config.TRUST_PROXY_HOPS);

  let draining = false;
  monitor.start();
  // The keys are fetched now and until they load (without them every token would be refused); then JwksSource keeps them
  // cached, also while the provider is unreachable.
  const loadKeys = () =>
    verifier.loadKeys().catch((err: unknown) => {
      logger.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'signing keys not loaded');
      if (!draining) setTimeout(loadKeys, 2_000).unref();
    });
  void loadKeys();

  const server = app.listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // While draining, every response closes its connection: a client's keep-alive connection would otherwise hold the
  // drain open until SHUTDOWN_TIMEOUT_MS (then exit 1), and a request it sent late would meet a closing socket.
  server.prependListener('request', (_req, res) => {
    if (draining) res.setHeader('connection', 'close');
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
      { name: 'readiness', run: () => void (draining = true) },
      {
        name: 'http',
        run: () =>
          new Promise<void>((resolve) => {
            // Requests in flight finish; connections idle now, or idle once their response is sent, are closed, so
            // the drain ends with the last response rather than at the timeout.
            const sweep = setInterval(() => server.closeIdleConnections(), 100);
            server.close(() => {
              clearInterval(sweep);
              resolve();
            });
            server.closeIdleConnections();
          }),
      },
      {
        name: 'clients',
        run: () => {
          dependencies.close();
          [users, organizations, groups, drives, scim, webhooks].forEach((c) => c.close());
        },
      },
      { name: 'redis', run: () => Promise.all([revocations.close(), redis?.quit()]) },
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
