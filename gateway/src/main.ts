// The gateway's process: tracing, configuration, logging, metrics, the gRPC hop's TLS and graceful shutdown are every
// process's (runProcess, as runService's); this wires the gateway's own parts (wiring.ts) into the app.
import { checkGrpcTls } from '@mileage/runtime/grpc';
import { runProcess } from '@mileage/runtime/service';
import { createApp } from './app';
import { checkCursorSecrets, configSchema } from './config';
import { gatewayDependencies } from './dependencies';
import { OrganizationShares } from './fair-share';
import { OrganizationCredentials } from './organization-credentials';
import { RateLimits } from './rate-limit';
import { LocalRevocations, RedisRevocations } from './scim-token-revocations';
import { downstreamClients, drain, listen, loadSigningKeys, openRedis, tokenVerifier } from './wiring';

const schema = configSchema.superRefine(checkGrpcTls).superRefine(checkCursorSecrets);

void runProcess('gateway', schema, async ({ config, logger, metrics, tls }) => {
  const redis = openRedis(config, logger);
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
  const clients = downstreamClients(config, { tls, metrics, logger, monitor });
  if (!config.CURSOR_SECRET)
    logger.warn(
      'CURSOR_SECRET is not set: page cursors are signed with a per-process key and do not survive a restart or cross replicas',
    );
  // SCIM secret token revocations reach the other replicas through Redis; without it this gateway is the only one.
  const revocations = redis ? new RedisRevocations({ redis, logger, metrics }) : new LocalRevocations();
  const verifier = tokenVerifier(config, { metrics, logger });
  let draining = false;
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
    ...clients,
    credentials: new OrganizationCredentials({
      organizations: clients.organizations,
      clientOrganizations: config.SCIM_CLIENT_ORGANIZATIONS,
      tokenCacheSeconds: config.SCIM_TOKEN_CACHE_SECONDS,
      revocations,
    }),
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

  monitor.start();
  loadSigningKeys(verifier, logger, () => draining);
  const server = await listen(app, config, () => draining);
  logger.info(
    { host: config.HOST, port: config.PORT, metrics_port: config.METRICS_PORT, redis: Boolean(redis) },
    'gateway listening',
  );

  return {
    shutdown: [
      { name: 'readiness', run: () => void (draining = true) },
      { name: 'http', run: () => drain(server) },
      {
        name: 'clients',
        run: () => {
          dependencies.close();
          Object.values(clients).forEach((c) => c.close());
        },
      },
      { name: 'redis', run: () => Promise.all([revocations.close(), redis?.quit()]) },
    ],
  };
});
