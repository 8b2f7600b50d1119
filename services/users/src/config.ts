import { env } from '@mileage/runtime/config';
import { outboxRelayConfigShape } from '@mileage/runtime/outbox';
import { z } from 'zod';

/** The Users service's own environment variables, on top of every service's (runService parses them together). */
export const configShape = {
  ...outboxRelayConfigShape,
  /**
   * Where organization exports' archives are kept on local disk (`npm start`: DATA_DIR/archives). Unset: exports are
   * off (RequestExport answers UNAVAILABLE).
   */
  EXPORT_ARCHIVE_DIR: z.string().min(1).optional(),
  /**
   * Or an S3-compatible bucket (Kubernetes: every replica writes and serves the same archives). Credentials come from
   * the SDK's default chain: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (the chart's Secret), or a workload identity.
   * Set, it is used instead of EXPORT_ARCHIVE_DIR.
   */
  EXPORT_S3_BUCKET: z.string().min(1).optional(),
  /** Unset: AWS S3 itself; else the server's URL (MinIO, SeaweedFS, …). */
  EXPORT_S3_ENDPOINT: z.url().optional(),
  EXPORT_S3_REGION: z.string().min(1).default('us-east-1'),
  /** Path-style URLs (endpoint/bucket/key), which most self-hosted servers need. */
  EXPORT_S3_FORCE_PATH_STYLE: env.boolean(false),
  /** How often a replica looks for a queued export to run. */
  EXPORT_POLL_MS: env.positiveInt(2_000),
  /** Public URL of /scim/v2 as clients reach it: `meta.location` of the users in an export (as the SCIM service's). */
  SCIM_BASE_URL: z
    .url()
    .default('http://127.0.0.1:8080/scim/v2')
    .transform((u) => u.replace(/\/$/, '')),
};
