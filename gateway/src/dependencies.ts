import { DependencyMonitor, grpcHealthCheck, type DependencyCheck } from '@mileage/runtime/service';
import { HealthClient } from '@mileage/runtime/grpc';
import { type Logger, type Metrics } from '@mileage/runtime/telemetry';
import type { ChannelCredentials } from '@grpc/grpc-js';
import type { Redis } from 'ioredis';

/** The gRPC services the gateway calls, by the name of their health-checked service. */
export const DOWNSTREAMS = {
  users: 'mileage.users.v1.UsersService',
  groups: 'mileage.groups.v1.GroupsService',
  drives: 'mileage.drives.v1.DrivesService',
  scim: 'mileage.scim.v1.ScimService',
  webhooks: 'mileage.webhooks.v1.WebhooksService',
} as const;

export type Downstream = keyof typeof DOWNSTREAMS;

/**
 * The gateway's view of its dependencies: each gRPC service (its grpc.health.v1 status, which a service reports
 * NOT_SERVING while its database is down) and Redis. Reported on /healthz/dependencies and as `dependency_up`; a
 * service that is down makes only the routes that call it fail fast (503). Readiness never depends on it.
 */
export function gatewayDependencies(options: {
  addresses: Record<Downstream, string>;
  redis?: Redis;
  metrics?: Metrics;
  logger?: Logger;
  intervalMs?: number;
  timeoutMs?: number;
  /** The channel credentials of the health clients (mutual TLS when configured). */
  credentials?: ChannelCredentials;
}): { monitor: DependencyMonitor; close(): void } {
  const health = (Object.keys(DOWNSTREAMS) as Downstream[]).map((name) => ({
    name,
    client: new HealthClient(options.addresses[name], ...(options.credentials ? [options.credentials] : [])),
  }));
  const checks: DependencyCheck[] = health.map(({ name, client }) => grpcHealthCheck(name, client, DOWNSTREAMS[name]));
  const redis = options.redis;
  if (redis) checks.push({ name: 'redis', check: async () => (await redis.ping()) === 'PONG' });
  const monitor = new DependencyMonitor({
    checks,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.intervalMs ? { intervalMs: options.intervalMs } : {}),
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
  });
  return {
    monitor,
    close: () => {
      void monitor.stop();
      for (const { client } of health) client.close();
    },
  };
}
