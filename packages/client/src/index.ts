export {
  createMileageClient,
  oauthToken,
  type ClientOptions,
  type MileageClient,
  type OAuthGrant,
  type OAuthTokenOptions,
  type Schemas,
  type TokenSource,
} from './client';
export type { components, operations, paths } from './generated/api';
export {
  applySync,
  MileageApiError,
  retryAfterMs,
  syncReportedDrives,
  syncUserDrives,
  type Drive,
  type DriveTombstone,
  type ReportedDrive,
  type ReportedDriveTombstone,
  type SyncEvent,
  type SyncOptions,
  type SyncState,
  type SyncTarget,
} from './sync';
export {
  MAX_WEBHOOK_TOLERANCE_SECONDS,
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
  type VerifiedWebhook,
  type WebhookEvent,
  type WebhookEventType,
} from './webhooks';
export {
  downloadExport,
  requestExport,
  waitForExport,
  type DownloadOptions,
  type Export,
  type WaitOptions,
} from './exports';
