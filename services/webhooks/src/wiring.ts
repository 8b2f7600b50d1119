// What main.ts hands to runService: the service's parts built from its configuration, and its background tasks.
import type { groupsV1 } from '@mileage/proto';
import type { BackgroundTask, ServiceContext, ServiceConfig } from '@mileage/runtime/service';
import type { PromiseClient } from '@mileage/runtime/grpc';
import { archiveStoreOf } from '@mileage/runtime/storage';
import { deliverySchedule, type configShape } from './config';
import { WebhooksRepository } from './repo';
import { SecretBox } from './secrets';
import type { WebhooksServerDeps } from './server';
import { systemResolver, type TargetPolicy } from './targets';
import { deliveryPoll, DeliveryWorker } from './worker';

type Config = ServiceConfig<typeof configShape>;
export type WebhooksDeps = WebhooksServerDeps & { worker: DeliveryWorker; repo: WebhooksRepository };

export function webhooksDependencies(
  context: ServiceContext<Config, { groups: PromiseClient<groupsV1.GroupsServiceClient> }>,
): WebhooksDeps {
  const { config, knex, logger, metrics, clients } = context;
  if (config.WEBHOOKS_MODE === 'production' && !config.WEBHOOKS_SECRET_KEY)
    throw new Error('WEBHOOKS_SECRET_KEY is required in production mode (it encrypts the signing secrets at rest)');
  if (!config.WEBHOOKS_SECRET_KEY)
    logger.warn('WEBHOOKS_SECRET_KEY is not set: signing secrets are stored unencrypted');
  const policy: TargetPolicy = {
    mode: config.WEBHOOKS_MODE,
    allow: config.WEBHOOKS_ALLOW_PRIVATE_TARGETS,
    ports: config.WEBHOOKS_TARGET_PORTS,
  };
  if (policy.allow.size) logger.warn({ allowed: [...policy.allow] }, 'webhook targets may be non-public addresses');
  const repo = new WebhooksRepository(knex);
  const secrets = new SecretBox(config.WEBHOOKS_SECRET_KEY);
  const worker = new DeliveryWorker({
    repo,
    secrets,
    logger,
    metrics,
    send: {
      policy,
      resolver: systemResolver,
      connectTimeoutMs: config.WEBHOOKS_CONNECT_TIMEOUT_MS,
      timeoutMs: config.WEBHOOKS_TIMEOUT_MS,
    },
    concurrency: config.WEBHOOKS_CONCURRENCY,
    perSubscription: config.WEBHOOKS_SUBSCRIPTION_CONCURRENCY,
    ...deliverySchedule(config),
  });
  const archives = archiveStoreOf(config);
  return {
    repo,
    secrets,
    policy,
    resolver: systemResolver,
    groups: clients.groups,
    worker,
    logger,
    knex,
    ...(archives ? { archives } : {}),
  };
}

export function webhooksTasks(deps: WebhooksDeps, config: Config): BackgroundTask[] {
  return [
    deliveryPoll(deps.worker, config.WEBHOOKS_POLL_INTERVAL_MS),
    {
      name: 'purge',
      everyMs: 3_600_000,
      run: async () => {
        const purged = await deps.repo.purge(config.WEBHOOKS_RETENTION_MS);
        if (purged.deliveries || purged.events) deps.logger?.info(purged, 'finished deliveries and events purged');
      },
    },
  ];
}
