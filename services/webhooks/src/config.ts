import { env } from '@mileage/runtime/config';
import { archiveStoreConfigShape } from '@mileage/runtime/storage';
import { z } from 'zod';
import { parsePortRange, TARGET_CLASSES, type PortRange, type TargetClass } from './targets';

const allowList = env
  .list(
    '',
    (c) => (TARGET_CLASSES as readonly string[]).includes(c),
    `a comma-separated list of ${TARGET_CLASSES.join(', ')}`,
  )
  .transform((list) => new Set(list as TargetClass[]));

/** The Webhooks service's own environment variables, on top of every service's (runService parses them together). */
export const configShape = {
  /** Where its part of an organization export goes (the Users service's export job assembles the archive). */
  ...archiveStoreConfigShape,
  GROUPS_ADDRESS: env.target('127.0.0.1:50052'),
  GRPC_DEADLINE_MS: env.positiveInt(3_000),
  /** `production` (default): https targets only. `development`: http allowed too (npm start, tests). */
  WEBHOOKS_MODE: z.enum(['production', 'development']).default('production'),
  /** Address classes a target may resolve to besides public ones: loopback, private, link-local. */
  WEBHOOKS_ALLOW_PRIVATE_TARGETS: allowList,
  /** The ports a target may use: ports and inclusive ranges, e.g. `443,8443` (npm start: `1-65535`). */
  WEBHOOKS_TARGET_PORTS: env
    .list(
      '443',
      (item) => parsePortRange(item) !== undefined,
      'a comma-separated list of ports or ranges (443,8000-8999)',
      1,
    )
    .transform((list) => list.map((item) => parsePortRange(item)!) as PortRange[]),
  /**
   * Key (at least 32 characters) that encrypts the signing secrets at rest (AES-256-GCM). Required in production mode;
   * unset in development mode: secrets are stored unencrypted (a warning at start).
   */
  WEBHOOKS_SECRET_KEY: z.string().min(32, 'at least 32 characters').optional(),
  /** Connecting to a target (DNS + TCP + TLS) may take this long. */
  WEBHOOKS_CONNECT_TIMEOUT_MS: env.positiveInt(5_000),
  /** A whole attempt (connect, send, response head) may take this long. */
  WEBHOOKS_TIMEOUT_MS: env.positiveInt(15_000),
  /** Deliveries attempted at once by one replica. */
  WEBHOOKS_CONCURRENCY: env.positiveInt(32),
  /**
   * Attempts in flight for one subscription, over every replica: a group's (at most 10) dead endpoints hold at most
   * 10 × this many slots, so keep it below WEBHOOKS_CONCURRENCY / 10 for other groups to find free ones.
   */
  WEBHOOKS_SUBSCRIPTION_CONCURRENCY: env.positiveInt(2),
  /** Pause between two polls of the delivery queue (a PublishEvents wakes the local worker at once). */
  WEBHOOKS_POLL_INTERVAL_MS: env.positiveInt(250),
  /** First retry delay; doubled per attempt up to WEBHOOKS_RETRY_MAX_DELAY_MS, each with ±20 % jitter. */
  WEBHOOKS_RETRY_BASE_MS: env.positiveInt(10_000),
  WEBHOOKS_RETRY_MAX_DELAY_MS: env.positiveInt(3_600_000),
  /** A delivery is retried until it is this old (default 24 h); then it is marked failed. */
  WEBHOOKS_RETRY_WINDOW_MS: env.positiveInt(86_400_000),
  /** A subscription is disabled after this many failed attempts in a row… */
  WEBHOOKS_DISABLE_AFTER_FAILURES: env.positiveInt(50),
  /** …that have lasted at least this long (default 24 h) without a single success. */
  WEBHOOKS_DISABLE_AFTER_MS: env.positiveInt(86_400_000),
  /** Deliveries and events are kept this long after they are finished (default 30 days). */
  WEBHOOKS_RETENTION_MS: env.positiveInt(30 * 86_400_000),
};

export type WebhooksConfig = {
  [K in keyof typeof configShape]: z.infer<(typeof configShape)[K]>;
};

const SCHEDULE_KEYS = [
  'WEBHOOKS_RETRY_BASE_MS',
  'WEBHOOKS_RETRY_MAX_DELAY_MS',
  'WEBHOOKS_RETRY_WINDOW_MS',
  'WEBHOOKS_DISABLE_AFTER_FAILURES',
  'WEBHOOKS_DISABLE_AFTER_MS',
] as const;

/** The delivery worker's retry and disable schedule, from the configuration. */
export function deliverySchedule(config: Pick<WebhooksConfig, (typeof SCHEDULE_KEYS)[number]>) {
  return {
    retry: {
      baseMs: config.WEBHOOKS_RETRY_BASE_MS,
      maxDelayMs: config.WEBHOOKS_RETRY_MAX_DELAY_MS,
      windowMs: config.WEBHOOKS_RETRY_WINDOW_MS,
    },
    disable: { afterFailures: config.WEBHOOKS_DISABLE_AFTER_FAILURES, afterMs: config.WEBHOOKS_DISABLE_AFTER_MS },
  };
}

/** The schedule of a deployment that sets none of those variables (the webhook bench runs the worker with it). */
export function defaultDeliverySchedule(): ReturnType<typeof deliverySchedule> {
  return deliverySchedule(
    z.object(Object.fromEntries(SCHEDULE_KEYS.map((k) => [k, configShape[k]]))).parse({}) as never,
  );
}
