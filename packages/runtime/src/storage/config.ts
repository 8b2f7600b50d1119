import { z } from 'zod';
import { env } from '../config/config';
import { LocalArchiveStore, type ArchiveStore } from './archive-store';
import { S3ArchiveStore } from './s3-archive-store';

/**
 * Where organization exports' archives and parts are kept, read by every process that writes or serves them (the
 * Users service's job, and each owner writing its part).
 */
export const archiveStoreConfigShape = {
  /** A local folder (`npm start`: DATA_DIR/archives). Unset, and no bucket: exports are off. */
  EXPORT_ARCHIVE_DIR: z.string().min(1).optional(),
  /**
   * Or an S3-compatible bucket every replica shares (Kubernetes). Credentials come from the SDK's default chain:
   * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (the chart's Secret), or a workload identity. Set, it is used instead of
   * EXPORT_ARCHIVE_DIR.
   */
  EXPORT_S3_BUCKET: z.string().min(1).optional(),
  /** Unset: AWS S3 itself; else the server's URL (MinIO, SeaweedFS, …). */
  EXPORT_S3_ENDPOINT: z.url().optional(),
  EXPORT_S3_REGION: z.string().min(1).default('us-east-1'),
  /** Path-style URLs (endpoint/bucket/key), which most self-hosted servers need. */
  EXPORT_S3_FORCE_PATH_STYLE: env.boolean(false),
};

/** The store the configuration names: the S3 bucket, else the local folder, else none (exports off). */
export function archiveStoreOf(config: {
  EXPORT_ARCHIVE_DIR?: string | undefined;
  EXPORT_S3_BUCKET?: string | undefined;
  EXPORT_S3_ENDPOINT?: string | undefined;
  EXPORT_S3_REGION: string;
  EXPORT_S3_FORCE_PATH_STYLE: boolean;
}): ArchiveStore | undefined {
  if (config.EXPORT_S3_BUCKET)
    return new S3ArchiveStore({
      bucket: config.EXPORT_S3_BUCKET,
      region: config.EXPORT_S3_REGION,
      forcePathStyle: config.EXPORT_S3_FORCE_PATH_STYLE,
      ...(config.EXPORT_S3_ENDPOINT ? { endpoint: config.EXPORT_S3_ENDPOINT } : {}),
    });
  return config.EXPORT_ARCHIVE_DIR ? new LocalArchiveStore(config.EXPORT_ARCHIVE_DIR) : undefined;
}
