import { env } from '@mileage/runtime/config';
import { outboxRelayConfigShape } from '@mileage/runtime/outbox';
import { archiveStoreConfigShape } from '@mileage/runtime/storage';
import { z } from 'zod';
import { DEFAULT_TOMBSTONE_RETENTION_DAYS } from './drives-repo';
import { DEFAULT_EXPORT_DUTY_CYCLE } from './export-part';

/** The Drives service's own environment variables, on top of every service's (runService parses them together). */
export const configShape = {
  ...outboxRelayConfigShape,
  /** How long the tombstones of deleted drives and withdrawn reports stay in the change feed. */
  TOMBSTONE_RETENTION_DAYS: env.positiveInt(DEFAULT_TOMBSTONE_RETENTION_DAYS),
  /** How often the housekeeping purges tombstones past the retention window. */
  TOMBSTONE_PURGE_INTERVAL_MS: env.positiveInt(3_600_000),
  /** The Groups service, asked whether a group a drive is reported to is of the drive's organization. */
  GROUPS_ADDRESS: env.target('127.0.0.1:50052'),
  GRPC_DEADLINE_MS: env.positiveInt(3_000),
  // Where its part of an organization export goes (the Users service's export job assembles the archive).
  ...archiveStoreConfigShape,
  /** The share of the wall time writing that part may take (0 < x ≤ 1): the rest is left to other organizations. */
  EXPORT_DUTY_CYCLE: z.coerce.number().gt(0).max(1).default(DEFAULT_EXPORT_DUTY_CYCLE),
};
