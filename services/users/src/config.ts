import { env } from '@mileage/runtime/config';
import { outboxRelayConfigShape } from '@mileage/runtime/outbox';
import { archiveStoreConfigShape } from '@mileage/runtime/storage';
import { z } from 'zod';
import { DEFAULT_BACKUPS_HOLD_DAYS } from './offboarding-repo';

/** The Users service's own environment variables, on top of every service's (runService parses them together). */
export const configShape = {
  ...outboxRelayConfigShape,
  ...archiveStoreConfigShape,
  /** The Groups service, which writes its part of each export (its groups); unset: the part is left out. */
  GROUPS_ADDRESS: env.optionalTarget(),
  /** The Drives service, which writes its part of each export (its reported drives); unset: the part is left out. */
  DRIVES_ADDRESS: env.optionalTarget(),
  /** How often a replica looks for a queued export to run. */
  EXPORT_POLL_MS: env.positiveInt(2_000),
  /** Days after an erasure until no backup holds the data: the erasure receipt's date (docs/operations.md). */
  ERASURE_BACKUPS_HOLD_DAYS: env.positiveInt(DEFAULT_BACKUPS_HOLD_DAYS),
  /** Public URL of /scim/v2 as clients reach it: `meta.location` of the users in an export (as the SCIM service's). */
  SCIM_BASE_URL: z
    .url()
    .default('http://127.0.0.1:8080/scim/v2')
    .transform((u) => u.replace(/\/$/, '')),
};
